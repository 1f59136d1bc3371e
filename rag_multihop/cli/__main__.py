"""``python -m rag_multihop.cli``: the same as the ``rag-multihop`` command."""

from rag_multihop.cli import main

raise SystemExit(main())
