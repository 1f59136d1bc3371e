"""Passage and query vectors for the LLM-free judges: stored by id, encoded when unknown.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Passage, Query
    >>> store = PassageVectors(ids=["a", "b"], vectors=np.array([[3.0, 4.0], [0.0, 2.0]]))
    >>> rows = store.passages([Passage("b", "y"), Passage("a", "x")])
    >>> [[round(float(v), 2) for v in row] for row in rows]
    [[0.0, 1.0], [0.6, 0.8]]
    >>> store.query(Query("q", embedding=np.array([2.0, 0.0]))).tolist()
    [1.0, 0.0]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Passage, Query
from rag_multihop.validation import as_embedding_matrix, l2_normalize

logger = logging.getLogger(__name__)


class PassageVectors:
    """Unit-length vectors of passages (by id) and queries.

    Args:
        encoder: embeds passages without a stored vector (``passage.embedding_text``) and
            queries without an embedding; ``None`` makes those an error.
        ids, vectors: stored passage vectors, one row per id (normalised here).
        memo_size: encoded passages are remembered by their text, up to this many (the
            oldest are forgotten first; 0 disables), since a pool often repeats passages
            of earlier queries.
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        *,
        ids: Sequence[str] = (),
        vectors: np.ndarray | None = None,
        memo_size: int = 10_000,
    ) -> None:
        if isinstance(memo_size, bool) or not isinstance(memo_size, int) or memo_size < 0:
            raise ValueError(f"memo_size must be an integer >= 0, got {memo_size!r}")
        self.encoder = encoder
        self.memo_size = memo_size
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._matrix: np.ndarray | None = None
        if vectors is not None:
            self._matrix = l2_normalize(as_embedding_matrix(vectors, name="passage vectors"))
            if self._matrix.shape[0] != len(ids):
                raise ValueError(f"got {len(ids)} ids but {self._matrix.shape[0]} vectors")
        elif len(ids):
            raise ValueError(f"got {len(ids)} ids but no vectors")
        self._row = {pid: i for i, pid in enumerate(ids)}
        if len(self._row) != len(ids):
            raise ValueError("passage ids must be unique")

    def _encode(self, texts: list[str], what: str) -> np.ndarray:
        if self.encoder is None:
            raise ValueError(
                f"{len(texts)} {what} have no stored vector and no encoder was given; pass "
                "PassageVectors(encoder=...) or store their vectors"
            )
        return l2_normalize(as_embedding_matrix(self.encoder.encode(texts), name="encoder output"))

    def passages(self, passages: Sequence[Passage]) -> np.ndarray:
        """``(len(passages), dim)`` unit rows; unknown passages are encoded in one batch."""
        missing = [i for i, p in enumerate(passages) if p.id not in self._row]
        if not missing and self._matrix is not None:
            return self._matrix[[self._row[p.id] for p in passages]]
        encoded = self._remembered([passages[i].embedding_text for i in missing])
        out = np.zeros((len(passages), encoded.shape[1]), dtype=np.float32)
        out[missing] = encoded
        known = [i for i, p in enumerate(passages) if p.id in self._row]
        if known and self._matrix is not None:
            out[known] = self._matrix[[self._row[passages[i].id] for i in known]]
        return out

    def _remembered(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``, encoding (in one batch) only those not remembered."""
        with self._lock:
            known = {t: self._memo[t] for t in texts if t in self._memo}
        new = list(dict.fromkeys(t for t in texts if t not in known))
        fresh = dict(zip(new, self._encode(new, "passage(s)"), strict=True)) if new else {}
        if self.memo_size:
            with self._lock:
                for text, vector in fresh.items():
                    if len(self._memo) >= self.memo_size:
                        del self._memo[next(iter(self._memo))]
                    self._memo[text] = vector
        return np.stack([fresh[t] if t in fresh else known[t] for t in texts])

    def query(self, query: Query) -> np.ndarray:
        """The query's unit vector: its embedding when given, else the encoder's."""
        if query.embedding is not None:
            return l2_normalize(as_embedding_matrix(query.embedding, name="query embedding"))[0]
        return self._encode([query.text], "query text(s)")[0]
