"""A deterministic bag-of-words encoder for tests: no model, no network."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop.validation import check_texts


def hashing_vectors(texts: Sequence[str], dim: int = 64) -> np.ndarray:
    """Bag of words hashed into ``dim`` buckets, rows L2-normalised (zero rows stay zero).

    >>> vectors = hashing_vectors(["Paris, France", "france paris", ""], dim=4)
    >>> bool((vectors[0] == vectors[1]).all()), vectors[2].tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    """
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            word = word.strip(".,?!;:'\"()")
            if word:
                out[row, sum(map(ord, word)) * 2654435761 % dim] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


class HashingEncoder:
    """:func:`hashing_vectors` as a rag-multihop encoder; counts its ``encode`` calls.

    Args:
        dim: the number of buckets (the vectors' dimension).
        name: the encoder's name (caches and saved models record it).
    """

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
        return hashing_vectors(check_texts(texts), self._dim)
