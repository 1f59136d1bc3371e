"""The ``rag-multihop`` command line: ``demo``, ``bench``, ``methods``, ``aar``, ``llm``,
``perf`` and ``index``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}


def build_parser() -> argparse.ArgumentParser:
    from rag_multihop._version import __version__
    from rag_multihop.cli.aar import add_aar_parser
    from rag_multihop.cli.bench import add_bench_parsers
    from rag_multihop.cli.demo import add_demo_parser
    from rag_multihop.cli.index import add_index_parser
    from rag_multihop.cli.llm import add_llm_parser
    from rag_multihop.cli.perf import add_perf_parser

    parser = argparse.ArgumentParser(
        prog="rag-multihop",
        description="Multi-hop retrieval: run the demo, benchmark methods on a dataset, "
        "list the methods, train AAR models, serve the embedded local language model, "
        "measure speed, build and update a persistent corpus index.",
    )
    parser.add_argument("--version", action="version", version=f"rag-multihop {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)
    add_demo_parser(sub)
    add_bench_parsers(sub)
    add_aar_parser(sub)
    add_llm_parser(sub)
    add_perf_parser(sub)
    add_index_parser(sub)
    return parser


def _llm_errors() -> tuple[type[Exception], ...]:
    """The LLM layer's error base class, when its extra (pydantic) is installed."""
    try:
        from rag_multihop.llm.errors import LLMError
    except ImportError:
        return ()
    return (LLMError,)


def main(argv: Sequence[str] | None = None) -> int:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    args = build_parser().parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    handler = logging.StreamHandler()
    handler.setLevel(level)  # some libraries (bm25s) set their own loggers to DEBUG
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    if getattr(args, "no_progress", False):
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    handled: tuple[type[Exception], ...] = (ValueError, OSError, ImportError)
    try:
        return int(args.func(args))
    except handled + _llm_errors() as exc:
        print(f"rag-multihop: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
