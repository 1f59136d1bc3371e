"""Batched ANN search behind one protocol: the bridge pipeline's only view of the index.

A :class:`Searcher` answers several query texts at once (hop 1 is one query; entities and
generated queries are a batch), synchronously or asynchronously. :class:`DenseSearcher`
embeds the texts of a batch in one encoder call and runs one FAISS search;
:class:`RetrieverSearcher` adapts any core :class:`~rag_multihop.protocols.Retriever`;
framework adapters (LlamaIndex, Haystack) provide their own. :func:`as_searcher` picks one.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Corpus, Passage
    >>> from rag_multihop.index.dense import DenseIndex
    >>> corpus = Corpus([Passage("a", "x"), Passage("b", "y")])
    >>> searcher = DenseSearcher(corpus, DenseIndex.build(corpus.ids, np.eye(2, dtype="float32")))
    >>> hits = searcher.search([Query("q1", embedding=np.array([0.6, 0.8], dtype="float32"))], k=2)
    >>> [(c.id, round(c.score, 2)) for c in hits[0]]
    [('b', 0.8), ('a', 0.6)]
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rag_multihop.corpus import Corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import as_embedding_matrix, check_positive_int

logger = logging.getLogger(__name__)


@runtime_checkable
class Searcher(Protocol):
    """Ranked candidates for each of several queries (one list per query, rank 1 first)."""

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]: ...

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]: ...


class DenseSearcher:
    """FAISS search over a corpus; texts without an embedding are encoded in one batch.

    Candidates carry the signal ``"dense"`` (cosine for normalised vectors). ``encoder`` may
    be ``None`` when every query carries its embedding.

    Encoded texts are remembered: the ``memo_size`` most recently encoded ones (0 turns
    this off), plus every text given to :meth:`remember` (kept until the searcher goes), so
    a text searched again (an entity name, a sentence of a passage that is often the
    bridge) costs no encoder call.
    """

    def __init__(
        self,
        corpus: Corpus,
        index: DenseIndex,
        encoder: Encoder | None = None,
        *,
        memo_size: int = 10_000,
    ) -> None:
        if len(index) != len(corpus):
            raise ValueError(f"index holds {len(index)} passages but the corpus has {len(corpus)}")
        if isinstance(memo_size, bool) or not isinstance(memo_size, int) or memo_size < 0:
            raise ValueError(f"memo_size must be an integer >= 0, got {memo_size!r}")
        self.corpus = corpus
        self.index = index
        self.encoder = encoder
        self.memo_size = memo_size
        self._pinned: dict[str, np.ndarray] = {}
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_retriever(cls, dense: DenseRetriever, encoder: Encoder | None = None) -> DenseSearcher:
        """Search ``dense``'s index; ``encoder`` replaces its encoder (e.g. one without cache)."""
        return cls(dense.corpus, dense.index, encoder if encoder is not None else dense.encoder)

    def remember(self, texts: Sequence[str], vectors: np.ndarray | None = None) -> int:
        """Keep vectors of ``texts`` for later searches: ``vectors`` (one row per text), or
        the encoder's, encoding only texts not yet known (one batch). Returns how many texts
        were new. Use it to precompute query-independent texts (e.g.
        :meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.prepare`)."""
        texts = list(texts)
        given: dict[str, np.ndarray] = {}
        if vectors is not None:
            matrix = as_embedding_matrix(vectors, name="text vectors", dim=self.index.dim)
            if len(matrix) != len(texts):
                raise ValueError(f"got {len(texts)} texts but {len(matrix)} vectors")
            given = dict(zip(texts, matrix, strict=True))
        with self._lock:
            new = [text for text in dict.fromkeys(texts) if text not in self._pinned]
        if not new:
            return 0
        rows = np.stack([given[t] for t in new]) if given else self._encode(new)
        with self._lock:
            self._pinned.update(zip(new, rows, strict=True))
        return len(new)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self.encoder is None:
            raise ValueError(
                f"{len(texts)} query text(s) have no embedding and the searcher has no "
                "encoder; pass DenseSearcher(..., encoder=...)"
            )
        encoded = self.encoder.encode(texts)
        return as_embedding_matrix(encoded, name="encoder output", dim=self.index.dim)

    def _known(self, text: str) -> np.ndarray | None:
        vector = self._pinned.get(text)
        if vector is None:
            vector = self._recent.get(text)
            if vector is not None:
                self._recent.move_to_end(text)
        return vector

    def _vectors(self, queries: Sequence[Query]) -> np.ndarray:
        rows = np.zeros((len(queries), self.index.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, query in enumerate(queries):
                if query.embedding is not None:
                    rows[i] = as_embedding_matrix(
                        query.embedding, name="query embedding", dim=self.index.dim
                    )[0]
                elif (known := self._known(query.text)) is not None:
                    rows[i] = known
                else:
                    missing.setdefault(query.text, []).append(i)
        if missing:
            encoded = self._encode(list(missing))
            for positions, vector in zip(missing.values(), encoded, strict=True):
                rows[positions] = vector
            if self.memo_size:
                with self._lock:
                    for text, vector in zip(missing, encoded, strict=True):
                        self._recent[text] = vector
                        if len(self._recent) > self.memo_size:
                            self._recent.popitem(last=False)
        return rows

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        if not queries:
            return []
        scores, ids = self.index.search(self._vectors(queries), k)
        return [
            rank_candidates(
                Candidate(self.corpus[pid], float(s), signals={"dense": float(s)})
                for pid, s in zip(row_ids, row_scores, strict=False)
            )
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        """:meth:`search` in a worker thread (encoding and FAISS release the event loop)."""
        return await asyncio.to_thread(self.search, queries, k)


class RetrieverSearcher:
    """Any core ``Retriever`` as a :class:`Searcher`: one ``retrieve`` call per query."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        return [self.retriever.retrieve(query, k=k) for query in queries]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        return await asyncio.to_thread(self.search, queries, k)


def as_searcher(base: Searcher | Retriever) -> Searcher:
    """``base`` as a :class:`Searcher`: searchers as they are, a ``DenseRetriever`` batched,
    any other ``Retriever`` one query at a time; anything else raises ``TypeError``."""
    if isinstance(base, Searcher):
        return base
    if isinstance(base, DenseRetriever):
        return DenseSearcher.from_retriever(base)
    if isinstance(base, Retriever):
        return RetrieverSearcher(base)
    raise TypeError(
        f"base must be a Searcher (search + asearch) or a Retriever (retrieve), "
        f"got {type(base).__name__}"
    )
