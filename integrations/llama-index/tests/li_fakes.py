"""Deterministic fakes for the LlamaIndex integration's tests: an embed model over
:func:`rag_multihop.testing.hashing_vectors` (bag of words hashed into buckets; no model, no
network). The rag-multihop encoder is :class:`rag_multihop.testing.HashingEncoder`."""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding

from rag_multihop.testing import hashing_vectors

__all__ = ["HashingEmbedding"]


class HashingEmbedding(BaseEmbedding):
    """:func:`hashing_vectors` as a LlamaIndex embed model (a user's own embedder)."""

    dim: int = 64

    def _get_query_embedding(self, query: str) -> list[float]:
        return hashing_vectors([query], self.dim)[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hashing_vectors([text], self.dim)[0].tolist()
