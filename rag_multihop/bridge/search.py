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
    """

    def __init__(self, corpus: Corpus, index: DenseIndex, encoder: Encoder | None = None) -> None:
        if len(index) != len(corpus):
            raise ValueError(f"index holds {len(index)} passages but the corpus has {len(corpus)}")
        self.corpus = corpus
        self.index = index
        self.encoder = encoder

    @classmethod
    def from_retriever(cls, dense: DenseRetriever, encoder: Encoder | None = None) -> DenseSearcher:
        """Search ``dense``'s index; ``encoder`` replaces its encoder (e.g. one without cache)."""
        return cls(dense.corpus, dense.index, encoder if encoder is not None else dense.encoder)

    def _vectors(self, queries: Sequence[Query]) -> np.ndarray:
        rows = np.zeros((len(queries), self.index.dim), dtype=np.float32)
        missing = [i for i, q in enumerate(queries) if q.embedding is None]
        for i, query in enumerate(queries):
            if query.embedding is not None:
                rows[i] = as_embedding_matrix(
                    query.embedding, name="query embedding", dim=self.index.dim
                )[0]
        if missing:
            if self.encoder is None:
                raise ValueError(
                    f"{len(missing)} query text(s) have no embedding and the searcher has no "
                    "encoder; pass DenseSearcher(..., encoder=...)"
                )
            encoded = self.encoder.encode([queries[i].text for i in missing])
            rows[missing] = as_embedding_matrix(encoded, name="encoder output", dim=self.index.dim)
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
