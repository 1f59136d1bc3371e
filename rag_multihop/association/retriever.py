"""Dense top-K, then association reranking: AAR as one core ``Retriever``.

Example (a fitted reranker and any base retriever, e.g. a ``DenseRetriever``):
    >>> retriever = AssociationRetriever(dense, reranker, candidates=100)  # doctest: +SKIP
    >>> [c.id for c in retriever.retrieve(Query("Who directed ...?"), k=5)]  # doctest: +SKIP
"""

from __future__ import annotations

from rag_multihop.association.reranker import AssociationReranker
from rag_multihop.association.settings import DEFAULT_CANDIDATES
from rag_multihop.protocols import Retriever
from rag_multihop.reranked import RerankedRetriever

__all__ = ["DEFAULT_CANDIDATES", "AssociationRetriever"]


class AssociationRetriever(RerankedRetriever):
    """Retrieves ``candidates`` (K) passages with ``base`` and reranks them with ``reranker``
    (a :class:`~rag_multihop.reranked.RerankedRetriever`).

    ``candidates`` defaults to the reranker's ``settings.candidates``.

    ``retrieve(query, k)`` returns the best ``min(k, K)`` after reranking; candidates keep
    the base retriever's signals (``"dense"``, ...) and gain ``"association"`` and ``"cosine"``.
    """

    reranker: AssociationReranker
    trace_name = "aar"

    def __init__(
        self,
        base: Retriever,
        reranker: AssociationReranker,
        *,
        candidates: int | None = None,
    ) -> None:
        depth = reranker.settings.candidates if candidates is None else candidates
        super().__init__(base, reranker, candidates=depth)
