"""An encoder's identity by its vectors: the embeddings of a fixed set of probe texts.

A name says little about a model (the bundled MiniLM loaded by path and
``sentence-transformers/all-MiniLM-L6-v2`` are one model under two names; two different
384-dimensional models may share a name). Vectors say it all: an
:class:`EncoderFingerprint` keeps the unit-length embeddings of :data:`PROBE_TEXTS`, and
another encoder is the same model when it embeds every probe text in the same direction, up
to :data:`FINGERPRINT_TOLERANCE` (``1 − cosine``), which absorbs batch, thread and device
noise but no other model.

Example:
    >>> class Toy:
    ...     name, dim = "toy", 2
    ...     def __init__(self, sign=1.0):
    ...         self.sign = sign
    ...     def encode(self, texts, *, show_progress=False):
    ...         return np.array([[self.sign * len(t), 1.0] for t in texts], "float32")
    >>> fingerprint = EncoderFingerprint.of(Toy())
    >>> fingerprint.matches(Toy()), fingerprint.matches(Toy(sign=-1.0))
    (True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.validation import as_embedding_matrix, l2_normalize

PROBE_TEXTS: tuple[str, ...] = (
    "Polish Wedding is a 1998 American film written and directed by Theresa Connelly.",
    "Who was the first person to walk on the Moon?",
    "The mitochondrion produces most of the chemical energy of the cell.",
    "Shares fell 3.2% on Tuesday after the central bank raised interest rates.",
    "Berlin ist die Hauptstadt von Deutschland.",
    "def add(a, b): return a + b",
    "rain",
    "The quick brown fox jumps over the lazy dog.",
)
"""The texts whose embeddings identify an encoder (varied: entities, a question, science,
numbers, German, code, one word, a pangram)."""

FINGERPRINT_TOLERANCE = 0.01
"""The largest ``1 − cosine`` between a probe's saved and new embedding of the same model.
Runs of one model differ by about 1e-6; a different model, even of the same dimension,
by far more than 0.1."""


@dataclass(frozen=True)
class EncoderFingerprint:
    """The unit-length embeddings ``vectors`` of ``texts`` by one encoder.

    Attributes:
        texts: the probe texts (saved with the vectors, so a fingerprint stays checkable
            when :data:`PROBE_TEXTS` changes).
        vectors: a float32 ``(len(texts), dim)`` array of unit rows.
    """

    texts: tuple[str, ...]
    vectors: np.ndarray

    def __post_init__(self) -> None:
        texts = tuple(self.texts)
        if not texts or not all(isinstance(t, str) and t for t in texts):
            raise ValueError("a fingerprint needs at least one probe text, all non-empty strings")
        vectors = l2_normalize(as_embedding_matrix(self.vectors, name="fingerprint vectors"))
        if vectors.shape[0] != len(texts):
            raise ValueError(
                f"a fingerprint needs one vector per probe text: {len(texts)} texts, "
                f"{vectors.shape[0]} vectors"
            )
        vectors.setflags(write=False)
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "vectors", vectors)

    @classmethod
    def of(cls, encoder: Encoder, texts: Sequence[str] = PROBE_TEXTS) -> EncoderFingerprint:
        """The fingerprint of ``encoder`` (it embeds ``texts`` once)."""
        return cls(tuple(texts), encoder.encode(list(texts)))

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def similarity(self, encoder: Encoder) -> float:
        """The lowest cosine, over the probe texts, between these vectors and ``encoder``'s
        (``-1.0`` when the dimensions differ)."""
        if encoder.dim != self.dim:
            return -1.0
        other = l2_normalize(
            as_embedding_matrix(encoder.encode(list(self.texts)), name="the encoder's vectors")
        )
        if other.shape != self.vectors.shape:
            return -1.0
        return float(np.min(np.sum(other * self.vectors, axis=1)))

    def matches(self, encoder: Encoder, tolerance: float = FINGERPRINT_TOLERANCE) -> bool:
        """Whether ``encoder`` embeds every probe text within ``tolerance`` of these vectors."""
        return self.similarity(encoder) >= 1.0 - tolerance
