"""Deterministic fakes for the LlamaIndex integration's tests: a hashing encoder and embed model
(bag of words hashed into buckets; no model, no network)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding


def hashing_vectors(texts: Sequence[str], dim: int = 64) -> np.ndarray:
    """Bag of words hashed into ``dim`` buckets, rows L2-normalised (zero rows stay zero)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            word = word.strip(".,?!;:'\"()")
            if word:
                out[row, sum(map(ord, word)) * 2654435761 % dim] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


class HashingEncoder:
    """:func:`hashing_vectors` as a rag-multihop encoder; counts its ``encode`` calls."""

    def __init__(self, dim: int = 64, name: str = "hashing-test") -> None:
        self._dim, self._name = dim, name
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.calls += 1
        return hashing_vectors(texts, self._dim)


class HashingEmbedding(BaseEmbedding):
    """:func:`hashing_vectors` as a LlamaIndex embed model (a user's own embedder)."""

    dim: int = 64

    def _get_query_embedding(self, query: str) -> list[float]:
        return hashing_vectors([query], self.dim)[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hashing_vectors([text], self.dim)[0].tolist()
