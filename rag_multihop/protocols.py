"""The stage protocols every method implements.

A retriever maps a query to ranked candidates; a reranker maps a query and candidates to
new ranked candidates; a searcher answers several queries at once (a dense index embeds and
searches them in one batch). All return new objects and leave their inputs untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rag_multihop.types import Candidate, Query


@runtime_checkable
class Retriever(Protocol):
    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best candidates for ``query``, ranked (rank 1 first)."""
        ...


@runtime_checkable
class Reranker(Protocol):
    def rerank(
        self, query: Query, candidates: Sequence[Candidate], top_n: int | None = None
    ) -> list[Candidate]:
        """``candidates`` re-scored and re-ranked; at most ``top_n`` of them when given."""
        ...


@runtime_checkable
class Searcher(Protocol):
    """Ranked candidates for each of several queries (one list per query, rank 1 first),
    synchronously or asynchronously."""

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]: ...

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]: ...
