"""Vectors of passages and queries, from wherever they are: the one place that decides.

A passage's vector is, in order: the vector stored for its id, the vector the caller gives
for it, or the encoder's embedding of ``passage.embedding_text`` (encoded in one batch and
remembered by text, since pools repeat passages). A query's vector is its embedding when it
carries one, else the encoder's. Rows are checked (dimension, NaN) and unit length.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Passage, Query
    >>> store = PassageVectors(ids=["a", "b"], vectors=np.array([[3.0, 4.0], [0.0, 2.0]]))
    >>> rows = store.passages([Passage("b", "y"), Passage("c", "z")], given={"c": [1.0, 0.0]})
    >>> [[round(float(v), 2) for v in row] for row in rows]
    [[0.0, 1.0], [1.0, 0.0]]
    >>> store.query(Query("q", embedding=np.array([2.0, 0.0]))).tolist()
    [1.0, 0.0]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Passage, Query
from rag_multihop.validation import as_embedding_matrix, check_int, check_query, l2_normalize

logger = logging.getLogger(__name__)

Given = Mapping[str, Sequence[float] | np.ndarray]
"""Vectors a caller supplies for passages, by passage id."""


class Rows(Protocol):
    """Unit vectors read by row: indexing with a list of rows gives their ``(k, dim)``
    array (a numpy array, a memory map, an index's live vectors)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __getitem__(self, rows: Any) -> np.ndarray: ...


class PassageVectors:
    """Unit-length vectors of passages (stored by id, given, or encoded) and of queries.

    Args:
        encoder: embeds passages without a stored or given vector and queries without an
            embedding; ``None`` makes those an error.
        ids, vectors: stored passage vectors, one row per id (normalised here).
        memo_size: encoded passages are remembered by their text, up to this many (the
            oldest are forgotten first; 0 disables).
        dim: the expected dimension (default: the stored vectors', else the encoder's);
            vectors of another dimension are refused.
        store_name: what errors call the stored vectors ("this store", "the model").
        hint: what the error for passages without any vector suggests (the default names
            this class's arguments; an owner such as a reranker names its own).
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        *,
        ids: Sequence[str] = (),
        vectors: np.ndarray | None = None,
        memo_size: int = 10_000,
        dim: int | None = None,
        store_name: str = "this store",
        hint: str = "pass PassageVectors(encoder=...), give their vectors, or store them",
    ) -> None:
        self.encoder = encoder
        self.store_name = store_name
        self.hint = hint
        self.memo_size = check_int(memo_size, "memo_size", low=0)
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._matrix: Rows | None = None
        if vectors is not None:
            self._matrix = l2_normalize(
                as_embedding_matrix(vectors, name="passage vectors", dim=dim)
            )
            if self._matrix.shape[0] != len(ids):
                raise ValueError(f"got {len(ids)} ids but {self._matrix.shape[0]} vectors")
        elif len(ids):
            raise ValueError(f"got {len(ids)} ids but no vectors")
        self._row: Mapping[str, int] = {pid: i for i, pid in enumerate(ids)}
        if len(self._row) != len(ids):
            raise ValueError("passage ids must be unique")
        if dim is None and self._matrix is not None:
            dim = int(self._matrix.shape[1])
        self.dim = dim if dim is not None else getattr(encoder, "dim", None)

    @classmethod
    def stored_rows(
        cls,
        rows: Mapping[str, int],
        vectors: Rows,
        encoder: Encoder | None = None,
        *,
        store_name: str = "this store",
        memo_size: int = 10_000,
    ) -> PassageVectors:
        """Vectors stored elsewhere, read where asked: passage id → its row of ``vectors``
        (unit rows, kept as given: an index's memory-mapped vectors are not copied).

        >>> store = PassageVectors.stored_rows({"a": 1}, np.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> store.passages([Passage("a", "x")]).tolist()
        [[0.0, 1.0]]
        """
        out = cls(encoder, dim=int(vectors.shape[1]), store_name=store_name, memo_size=memo_size)
        out._row, out._matrix = rows, vectors
        return out

    def stores(self, passage_id: str) -> bool:
        """Whether a vector is stored for ``passage_id``."""
        return passage_id in self._row

    def passages(self, passages: Sequence[Passage], *, given: Given | None = None) -> np.ndarray:
        """``(len(passages), dim)`` unit rows: stored, else ``given[id]``, else encoded (the
        passages left for the encoder go in one batch)."""
        given = given or {}
        found = [self._row.get(p.id) for p in passages]  # one look-up each (an index searches)
        stored = [i for i, row in enumerate(found) if row is not None]
        if len(stored) == len(passages) and self._matrix is not None:
            return self._matrix[found]
        supplied = [i for i, row in enumerate(found) if row is None and passages[i].id in given]
        encode = [i for i, row in enumerate(found) if row is None and passages[i].id not in given]
        parts: list[tuple[list[int], np.ndarray]] = []
        if stored and self._matrix is not None:
            parts.append((stored, self._matrix[[found[i] for i in stored]]))
        if supplied:
            ids = [passages[i].id for i in supplied]
            raw = [np.asarray(given[pid], np.float32).ravel() for pid in ids]
            parts.append((supplied, self._checked(raw, ids)))
        if encode:
            if self.encoder is None:
                unknown = [passages[i].id for i in encode]
                raise ValueError(
                    f"{len(unknown)} passage(s) are not stored in {self.store_name} and have no "
                    f"vector given and no encoder to embed them: {unknown[:5]}; {self.hint}"
                )
            parts.append((encode, self._remembered([passages[i].embedding_text for i in encode])))
        width = parts[0][1].shape[1] if parts else (self.dim or 0)
        out = np.zeros((len(passages), width), dtype=np.float32)
        for rows, values in parts:
            out[rows] = values
        return out

    def _checked(self, raw: list[np.ndarray], ids: list[str]) -> np.ndarray:
        matrix = as_embedding_matrix(raw, name="given vectors", ids=ids)
        if self.dim is not None and matrix.shape[1] != self.dim:
            raise ValueError(
                f"vectors given for {ids[:5]} have dimension {matrix.shape[1]}, expected {self.dim}"
            )
        return l2_normalize(matrix)

    def _encode(self, texts: list[str]) -> np.ndarray:
        assert self.encoder is not None  # callers check, naming what has no vector
        return l2_normalize(self._rows(self.encoder.encode(texts), "the encoder's vectors"))

    def _rows(self, values: object, name: str) -> np.ndarray:
        return as_embedding_matrix(values, name=name, dim=self.dim)

    def _remembered(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``, encoding (in one batch) only those not remembered."""
        with self._lock:
            known = {t: self._memo[t] for t in texts if t in self._memo}
        new = list(dict.fromkeys(t for t in texts if t not in known))
        fresh = dict(zip(new, self._encode(new), strict=True)) if new else {}
        if self.memo_size:
            with self._lock:
                for text, vector in fresh.items():
                    if len(self._memo) >= self.memo_size:
                        del self._memo[next(iter(self._memo))]
                    self._memo[text] = vector
        return np.stack([fresh[t] if t in fresh else known[t] for t in texts])

    def queries(self, queries: Sequence[Query], *, normalize: bool = True) -> np.ndarray:
        """``(len(queries), dim)`` rows: each query's embedding, else the encoder's (one batch
        for all queries without one); unit length unless ``normalize=False`` (for an index
        that normalises itself)."""
        for query in queries:
            check_query(query)
        missing = [i for i, q in enumerate(queries) if q.embedding is None]
        given = [i for i, q in enumerate(queries) if q.embedding is not None]
        parts = [(i, self._rows(queries[i].embedding, "query embeddings")[0]) for i in given]
        if missing:
            if self.encoder is None:
                raise ValueError(
                    f"{len(missing)} query text(s) have no embedding and no encoder was given "
                    "to embed them; pass Query(..., embedding=...) or an encoder"
                )
            texts = [queries[i].text for i in missing]
            encoded = self._rows(self.encoder.encode(texts), "the encoder's vectors")
            parts.extend(zip(missing, encoded, strict=True))
        width = parts[0][1].shape[0] if parts else (self.dim or 0)
        matrix = np.zeros((len(queries), width), dtype=np.float32)
        for i, row in parts:
            matrix[i] = row
        return l2_normalize(matrix) if normalize else matrix

    def query(self, query: Query) -> np.ndarray:
        """The query's unit vector: its embedding when given, else the encoder's."""
        return self.queries([query])[0]
