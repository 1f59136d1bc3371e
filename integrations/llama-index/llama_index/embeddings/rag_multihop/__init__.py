"""LlamaIndex embedding of rag-multihop: the bundled all-MiniLM-L6-v2 (or any rag-multihop
encoder) as a ``BaseEmbedding``, offline.

Example:
    >>> from llama_index.core import Settings
    >>> from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
    >>> Settings.embed_model = RagMultihopEmbedding()  # doctest: +SKIP
"""

from __future__ import annotations

from llama_index.embeddings.rag_multihop.base import RagMultihopEmbedding

__all__ = ["RagMultihopEmbedding"]
