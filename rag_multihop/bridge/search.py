"""The bridge pipeline's view of the index: the batched :class:`~rag_multihop.protocols.Searcher`.

Hop 1 is one query; entities and generated queries are a batch. A
:class:`~rag_multihop.index.dense.DenseRetriever` is a searcher itself (one encoder call and
one FAISS search per batch); :class:`RetrieverSearcher` adapts any other core
:class:`~rag_multihop.protocols.Retriever`; framework adapters (LlamaIndex, Haystack) provide
their own. :func:`as_searcher` picks one.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Corpus, Passage, Query
    >>> from rag_multihop.index.dense import DenseIndex, DenseRetriever
    >>> corpus = Corpus([Passage("a", "x"), Passage("b", "y")])
    >>> dense = DenseRetriever(corpus, DenseIndex.build(corpus.ids, np.eye(2, dtype="float32")))
    >>> hits = as_searcher(dense).search([Query("q1", embedding=np.array([0.6, 0.8]))], k=2)
    >>> [(c.id, round(c.score, 2)) for c in hits[0]]
    [('b', 0.8), ('a', 0.6)]
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from rag_multihop.protocols import Retriever, Searcher
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

__all__ = ["RetrieverSearcher", "Searcher", "as_searcher"]


class RetrieverSearcher:
    """Any core ``Retriever`` as a :class:`Searcher`: one ``retrieve`` call per query."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        k = check_positive_int(k, "k")
        return [self.retriever.retrieve(query, k=k) for query in queries]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        return await asyncio.to_thread(self.search, queries, k)


def as_searcher(base: Searcher | Retriever) -> Searcher:
    """``base`` as a :class:`Searcher`: searchers (a ``DenseRetriever`` included) as they
    are, any other ``Retriever`` one query at a time; anything else raises ``TypeError``."""
    if isinstance(base, Searcher):
        return base
    if isinstance(base, Retriever):
        return RetrieverSearcher(base)
    raise TypeError(
        f"base must be a Searcher (search + asearch) or a Retriever (retrieve), "
        f"got {type(base).__name__}"
    )
