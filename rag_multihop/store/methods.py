"""The methods over an opened index (``MultiHopRetriever.from_index`` is one more).

:func:`graph_fusion_retriever` is the ``pit-boltzmann`` method of the benchmark (dense +
entity-graph PPR seeded by the query's entities and the dense top 2, PIT calibration,
Boltzmann fusion, graph pool capped at 10, 50 candidates per child), built from the
snapshot's stored structures; its rankings equal the benchmark method's over the same
passages. With ``first_stage=`` (any core retriever over the user's vector store) the dense
candidates come from that store (:class:`~rag_multihop.index.first_stage.StoreFirstStage`:
ids the index lacks skipped and counted, cosines from the index's vectors), so the index only
contributes the graph. :func:`aar_retriever` and :func:`rala_retriever` rerank the dense
top K with the index's sidecars (``docs/index.md``): AAR's stored model and passage
transforms, RaLa's stored token states; nothing is recomputed. :func:`bridge_retriever` is
the ``bridge`` method (BridgeRAG) searching the index, its LLM-free judge reading the
candidates' vectors from the index.

Example:
    >>> import tempfile, numpy as np
    >>> from rag_multihop import Passage, Query
    >>> from rag_multihop.store import CorpusIndex
    >>> index = CorpusIndex.build(tempfile.mkdtemp() + "/idx", [
    ...     Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope"),
    ...     Passage("b", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
    ...     Passage("c", "Psycho is a thriller.", "Psycho")],
    ...     np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]))
    >>> fusion = graph_fusion_retriever(index.snapshot())
    >>> query = Query("Who directed Rope?", embedding=np.array([1.0, 0.1]))
    >>> [c.id for c in fusion.retrieve(query, k=2)]
    ['a', 'b']
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from rag_multihop.encoders.base import Encoder
from rag_multihop.fusion.core import FusionSettings
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.index.first_stage import StoreFirstStage
from rag_multihop.protocols import Retriever
from rag_multihop.store.encoder_check import check_index_encoder
from rag_multihop.store.index import CorpusIndex
from rag_multihop.store.snapshot import IndexSnapshot
from rag_multihop.types import Candidate, Query
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.association.retriever import AssociationRetriever
    from rag_multihop.bridge.pipeline import BridgeRetriever
    from rag_multihop.coop.rala import RaLaRetriever

DEFAULT_CHILD_K = 50
"""Candidates each child gives the fusion (the benchmark's ``fusion_child_k``)."""


IndexSource = IndexSnapshot | CorpusIndex | str | os.PathLike[str]
"""What the methods read: a pinned version, an index (its current version) or its path."""


def as_snapshot(index: IndexSource) -> IndexSnapshot:
    """The version a method reads: ``index`` when it is a snapshot, else the current
    version of the :class:`CorpusIndex` given or found at the path given.

    >>> as_snapshot(42)
    Traceback (most recent call last):
    ...
    TypeError: expected an IndexSnapshot, a CorpusIndex or an index's path, got int
    """
    if isinstance(index, IndexSnapshot):
        return index
    if isinstance(index, CorpusIndex):
        return index.snapshot()
    if isinstance(index, str | os.PathLike):
        return CorpusIndex(index).snapshot()
    raise TypeError(
        f"expected an IndexSnapshot, a CorpusIndex or an index's path, got {type(index).__name__}"
    )


class LastSearch:
    """The index's dense retriever, answering a second, shallower call for the same query
    object from its last search (the fusion asks for ``child_k`` candidates, then its graph
    child for the top ``seed_top_n`` as seeds: one ANN search instead of two). The prefix
    is what the shallower search returns: each segment is searched with
    ``efSearch = max(ef_search, k)``, the same beam for any ``k`` up to ``ef_search``, and
    exactly for a flat segment (for passages of exactly equal score, the prefix keeps the
    lowest rows)."""

    def __init__(self, dense: DenseRetriever) -> None:
        self.dense = dense
        self._last: tuple[Query, int, list[Candidate]] | None = None

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0] is query and k <= last[1]:
            return last[2][:k]
        found = self.dense.retrieve(query, k=k)
        self._last = (query, k, found)
        return found


def dense_retriever(snapshot: IndexSource, encoder: Encoder | None = None) -> DenseRetriever:
    """Dense retrieval over the snapshot's segments; ``encoder`` must be the index's model
    (:func:`~rag_multihop.store.encoder_check.check_index_encoder`)."""
    snapshot = as_snapshot(snapshot)
    if encoder is not None:
        check_index_encoder(snapshot.manifest, encoder, where=snapshot.root)
    return DenseRetriever(snapshot.corpus, snapshot.dense_index, encoder, check_ids=False)


def index_vectors(snapshot: IndexSource, encoder: Encoder | None = None) -> PassageVectors:
    """The live passages' vectors by id, read from the snapshot's maps where asked (nothing
    copied at open); ``encoder`` embeds passages the index does not hold and queries."""
    snapshot = as_snapshot(snapshot)
    return PassageVectors.stored_rows(
        snapshot.id_positions, snapshot.vectors, encoder, store_name=f"the index {snapshot.root}"
    )


def graph_retriever(
    snapshot: IndexSource,
    *,
    seed_retriever: Retriever | None = None,
    settings: GraphSettings | None = None,
) -> GraphRetriever:
    """Entity-graph PPR over the snapshot's stored graph (the ``graph`` method)."""
    snapshot = as_snapshot(snapshot)
    return GraphRetriever(
        snapshot.entity_graph,
        snapshot.corpus,
        seed_retriever=seed_retriever,
        settings=settings or GraphSettings(),
        check_corpus=False,
    )


def graph_fusion_retriever(
    snapshot: IndexSource,
    *,
    encoder: Encoder | None = None,
    settings: GraphSettings | None = None,
    child_k: int = DEFAULT_CHILD_K,
    first_stage: Retriever | None = None,
) -> FusionRetriever:
    """Dense + graph fused with PIT calibration and Boltzmann fusion (``pit-boltzmann``);
    the dense candidates from ``first_stage`` (the user's store) when given."""
    snapshot = as_snapshot(snapshot)
    settings = settings or GraphSettings()
    if encoder is not None:
        check_index_encoder(snapshot.manifest, encoder, where=snapshot.root)
    dense: Retriever = (
        LastSearch(dense_retriever(snapshot, encoder))
        if first_stage is None
        else StoreFirstStage(first_stage, snapshot.corpus, snapshot.vectors, encoder)
    )
    graph = graph_retriever(snapshot, seed_retriever=dense, settings=settings)
    fusion = dataclasses.replace(
        FusionSettings(child_k=child_k),
        calibration="pit",
        fusion="boltzmann",
        pool_cap={"graph": settings.pool_cap},
    )
    return FusionRetriever({"dense": dense, "graph": graph}, settings=fusion)


def _first_stage(
    snapshot: IndexSnapshot, encoder: Encoder | None, first_stage: Retriever | None
) -> Retriever:
    if first_stage is None:
        return dense_retriever(snapshot, encoder)
    return StoreFirstStage(first_stage, snapshot.corpus, snapshot.vectors, encoder)


def aar_retriever(
    snapshot: IndexSource,
    *,
    encoder: Encoder | None = None,
    first_stage: Retriever | None = None,
    candidates: int | None = None,
    lambda_: float | None = None,
    mode: str | None = None,
) -> AssociationRetriever:
    """The dense top ``candidates`` reranked by the AAR model the index's ``aar`` sidecar
    holds (``AssociationReranker.from_index``: ``p`` and ``f(p)`` read, not recomputed)."""
    snapshot = as_snapshot(snapshot)
    from rag_multihop.association.reranker import AssociationReranker
    from rag_multihop.association.retriever import AssociationRetriever

    reranker = AssociationReranker.from_index(snapshot, encoder=encoder, lambda_=lambda_, mode=mode)
    base = _first_stage(snapshot, encoder, first_stage)
    return AssociationRetriever(base, reranker, candidates=candidates)


def rala_retriever(
    snapshot: IndexSource,
    encoder: Any,
    *,
    dense_encoder: Encoder | None = None,
    first_stage: Retriever | None = None,
    **options: Any,
) -> RaLaRetriever:
    """The dense top K reranked by RaLa with the token states of the index's ``rala``
    sidecar (``encoder``: the model whose states they are, for the query's states;
    ``options``: :class:`~rag_multihop.coop.rala.RaLaReranker`'s keyword arguments;
    ``dense_encoder`` embeds queries that carry no embedding)."""
    snapshot = as_snapshot(snapshot)
    from rag_multihop.coop.indexed import rala_from_index
    from rag_multihop.coop.rala import RaLaRetriever

    reranker = rala_from_index(snapshot, encoder, **options)
    return RaLaRetriever(_first_stage(snapshot, dense_encoder, first_stage), reranker)


def bridge_retriever(
    snapshot: IndexSource,
    *,
    encoder: Encoder,
    first_stage: Retriever | None = None,
    llm: Any = None,
    **options: Any,
) -> BridgeRetriever:
    """BridgeRAG over the index (the ``bridge`` method): hop 1 and the generated queries
    searched in the index's dense index (or ``first_stage``, the user's store, as
    :func:`graph_fusion_retriever` takes it), the LLM-free embedding judge reading the
    candidates' vectors from the index. ``encoder`` (the index's model) embeds the question
    and the queries the plan writes. With ``llm`` (what
    :meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.with_llm` takes) the LLM writes the
    queries and judges. ``options``: the keyword arguments of
    :meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.llm_free` / ``with_llm``
    (``settings=``, ``alpha=``, ...)."""
    snapshot = as_snapshot(snapshot)
    from rag_multihop.bridge.pipeline import BridgeRetriever

    check_index_encoder(snapshot.manifest, encoder, where=snapshot.root)
    base = _first_stage(snapshot, encoder, first_stage)
    if llm is not None:
        return BridgeRetriever.with_llm(base, llm, **options)
    return BridgeRetriever.llm_free(base, vectors=index_vectors(snapshot, encoder), **options)
