"""Deterministic fakes for the Haystack integration's tests: a hashing encoder and text and
document embedder components (bag of words hashed into buckets; no model, no network)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from haystack import Document, component


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


@component
class HashingTextEmbedder:
    """A user's own Haystack text embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        self.runs += 1
        return {"embedding": hashing_vectors([text], self.dim)[0].tolist()}


@component
class HashingDocumentEmbedder:
    """A user's own Haystack document embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.runs += 1
        vectors = hashing_vectors([d.content or "" for d in documents], self.dim)
        return {
            "documents": [
                replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors, strict=True)
            ]
        }
