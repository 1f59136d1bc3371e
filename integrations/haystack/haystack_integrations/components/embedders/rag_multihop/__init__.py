"""Haystack embedders of rag-multihop: the bundled all-MiniLM-L6-v2 (or any
sentence-transformers model) as text and document embedder components, offline.

- :class:`RagMultihopTextEmbedder`: ``text`` in, ``embedding`` out.
- :class:`RagMultihopDocumentEmbedder`: ``documents`` in, the same documents with
  ``embedding`` out.
"""

from __future__ import annotations

from haystack_integrations.components.embedders.rag_multihop.document_embedder import (
    RagMultihopDocumentEmbedder,
)
from haystack_integrations.components.embedders.rag_multihop.text_embedder import (
    RagMultihopTextEmbedder,
)

__all__ = ["RagMultihopDocumentEmbedder", "RagMultihopTextEmbedder"]
