"""Dense top-K, then association reranking: AAR as one core ``Retriever``.

Example (a fitted reranker and any base retriever, e.g. a ``DenseRetriever``):
    >>> retriever = AssociationRetriever(dense, reranker, candidates=100)  # doctest: +SKIP
    >>> [c.id for c in retriever.retrieve(Query("Who directed ...?"), k=5)]  # doctest: +SKIP
"""

from __future__ import annotations

from rag_multihop._settings import resolve_settings
from rag_multihop.association.reranker import AssociationReranker
from rag_multihop.association.settings import DEFAULT_CANDIDATES, AssociationSettings
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

__all__ = ["DEFAULT_CANDIDATES", "AssociationRetriever"]


class AssociationRetriever:
    """Retrieves ``candidates`` (K) passages with ``base`` and reranks them with ``reranker``.

    ``candidates`` defaults to the reranker's ``settings.candidates``.

    ``retrieve(query, k)`` returns the best ``min(k, K)`` after reranking; candidates keep
    the base retriever's signals (``"dense"``, ...) and gain ``"association"`` and ``"cosine"``.
    """

    def __init__(
        self,
        base: Retriever,
        reranker: AssociationReranker,
        *,
        candidates: int | None = None,
    ) -> None:
        self.base = base
        self.reranker = reranker
        settings = resolve_settings(AssociationSettings, reranker.settings, candidates=candidates)
        self.candidates = settings.candidates

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        check_positive_int(k, "k")
        found = self.base.retrieve(query, k=self.candidates)
        return self.reranker.rerank(query, found, top_n=k)
