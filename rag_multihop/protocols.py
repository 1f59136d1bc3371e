"""The two stage protocols every method implements.

A retriever maps a query to ranked candidates; a reranker maps a query and candidates to
new ranked candidates. Both return new objects and leave their inputs untouched.
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
