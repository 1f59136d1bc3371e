"""A first-stage retriever's top K, reranked: any :class:`~rag_multihop.protocols.Reranker`
over any :class:`~rag_multihop.protocols.Retriever`, as one core ``Retriever``.

``retrieve(query, k)`` asks ``base`` for ``candidates`` (K) passages and returns the
reranker's best ``min(k, K)`` (a pool smaller than K is reranked whole); candidates keep the
base's signals and gain the reranker's. ``aretrieve`` runs the same in a worker thread.
:class:`~rag_multihop.association.retriever.AssociationRetriever` (AAR) and
:class:`~rag_multihop.coop.rala.RaLaRetriever` (RaLa) are this class with K read from their
reranker's settings.

Example:
    >>> from rag_multihop import Candidate, Passage, Query
    >>> class Three:
    ...     def retrieve(self, query, k=10):
    ...         return [Candidate(Passage(i, i), s) for i, s in (("a", .9), ("b", .5))][:k]
    >>> class Reverse:
    ...     def rerank(self, query, candidates, top_n=None):
    ...         return [c.with_score(-c.score) for c in reversed(candidates)][:top_n]
    >>> reranked = RerankedRetriever(Three(), Reverse(), candidates=2)
    >>> [c.id for c in reranked.retrieve(Query("q"), k=5)]
    ['b', 'a']
"""

from __future__ import annotations

import asyncio

from rag_multihop.protocols import Reranker, Retriever
from rag_multihop.tracing import span
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

DEFAULT_CANDIDATES = 100
"""K when none is given: the depth AAR and RaLa rerank in their papers."""


class RerankedRetriever:
    """``base``'s top ``candidates`` reranked by ``reranker`` (see the module docstring)."""

    trace_name = "reranked"
    """Spans are ``rag_multihop.<trace_name>.run`` / ``.first_stage`` / ``.rerank``."""

    def __init__(
        self, base: Retriever, reranker: Reranker, *, candidates: int = DEFAULT_CANDIDATES
    ) -> None:
        if not isinstance(base, Retriever):
            raise TypeError(f"base must be a Retriever (retrieve), got {type(base).__name__}")
        if not isinstance(reranker, Reranker):
            raise TypeError(f"reranker must implement rerank, got {type(reranker).__name__}")
        self.base = base
        self.reranker = reranker
        self.candidates = check_positive_int(candidates, "candidates")

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        k = check_positive_int(k, "k")
        name = self.trace_name
        with span(f"{name}.run", k=k) as record:
            with span(f"{name}.first_stage", k=self.candidates) as stage:
                found = self.base.retrieve(query, k=self.candidates)
                stage.set(candidates=len(found))
            with span(f"{name}.rerank", candidates=len(found)) as stage:
                ranked = self.reranker.rerank(query, found, top_n=k)
                stage.set(returned=len(ranked))
            record.set(returned=len(ranked))
        return ranked

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """:meth:`retrieve` in a worker thread (search and reranking off the event loop)."""
        return await asyncio.to_thread(self.retrieve, query, k)
