"""Benchmark methods of the entity graph and the calibrated fusion (``rag-multihop bench``).

Registered when :mod:`rag_multihop.eval.registry` loads its core modules:

- ``graph``: :class:`~rag_multihop.graph.GraphRetriever` alone, seeded by the query's
  entities and the dense top-``graph_seed_top_n`` (the defaults);
- ``graph-entities``: seeded by query entities only; ``graph-dense5``: by the dense top 5
  only (the "title-mention PPR seeded by the dense top 5" of issue 4's hint);
- dense + graph fused by :class:`~rag_multihop.fusion.FusionRetriever`, every variant on the
  same child lists (``fusion_child_k`` per child, graph pool capped at ``graph_pool_cap``), one
  knob changed at a time: ``pit-boltzmann`` (ours, the recommended setting),
  ``pit-linear``, ``minmax-linear`` and ``minmax-boltzmann`` (calibration ablations),
  ``rrf`` and ``dbsf`` (rank / distribution fusion of the same lists);
- the pool-cap sweep ``pit-boltzmann-cap5``, ``-cap20``, ``-nocap`` (graph pool 5, 20, all);
- ``pit-boltzmann-3way``: dense + graph + BM25 (BM25 pool capped at 20).

The entity graph is built once per run (the context's memo); its build time and size are
in each graph method's ``extras``. Options (``--option KEY=VALUE``):

- ``graph_*`` (:class:`GraphBenchSettings`): the fields of
  :class:`~rag_multihop.graph.settings.GraphSettings` (``graph_seed_top_n`` 2,
  ``graph_entity_share`` 0.75, ``graph_damping`` 0.5, ``graph_ppr`` auto,
  ``graph_push_epsilon`` 1e-5, ``graph_pool_cap`` 10, ``graph_weights``, ``graph_tol``,
  ``graph_max_iter``) and ``graph_synonyms`` (false; true embeds entity names with the
  run's encoder for synonym edges);
- ``fusion_*``: the fields of :class:`~rag_multihop.fusion.core.FusionSettings` that the
  methods do not fix: ``fusion_child_k`` (50 here), ``fusion_consensus_beta`` (0) and
  ``fusion_params`` (e.g. ``c=2``: Boltzmann's temperature factor; each method takes the
  parameters its fusion accepts).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.options import FLATTEN
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.fusion.core import FusionSettings
from rag_multihop.fusion.functions import get_fusion
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.build import EntityGraph, build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphBenchSettings:
    """The graph methods' benchmark settings: the retriever's settings and whether the
    run's graph gets synonym edges (``use_entities`` is fixed by each method)."""

    graph: GraphSettings = field(default_factory=GraphSettings, metadata={FLATTEN: True})
    synonyms: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.synonyms, bool):
            raise ValueError(f"synonyms must be True or False, got {self.synonyms!r}")


GRAPH_OPTIONS = declare_settings(
    "graph_fusion", GraphBenchSettings, prefix="graph_", exclude={"use_entities"}
)
FUSION_OPTIONS = declare_settings(
    "graph_fusion",
    FusionSettings,
    prefix="fusion_",
    exclude={"calibration", "fusion", "weights", "pool_cap"},
    base=FusionSettings(child_k=50),
)
"""The fusion knobs the methods leave open; ``child_k`` is 50 in the benchmark."""

BM25_CAP = 20


def shared_graph(context: BenchContext) -> tuple[EntityGraph, float]:
    """The run's entity graph and the seconds its build took (built on first use)."""

    def build() -> tuple[EntityGraph, float]:
        start = time.perf_counter()
        graph = build_entity_graph(
            context.dataset.corpus,
            encoder=context.encoder if GRAPH_OPTIONS.read(context.options).synonyms else None,
        )
        seconds = time.perf_counter() - start
        logger.info("entity graph of %s built in %.1f s", context.dataset.name, seconds)
        return graph, seconds

    return context.memo("entity_graph", build)


class _Benchmarked:
    """A retriever plus the extras the report shows next to its numbers."""

    def __init__(self, retriever: Retriever, extras: dict[str, Any]) -> None:
        self.retriever = retriever
        self.extras = extras

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.retriever.retrieve(query, k=k)

    def bench_extras(self) -> dict[str, Any]:
        return {**settings_report(self.retriever), **self.extras}


def settings_report(retriever: Retriever) -> dict[str, Any]:
    """The settings of a graph or fusion retriever, reported next to its numbers."""
    if isinstance(retriever, GraphRetriever):
        s = retriever.settings
        return {
            "passages": retriever.graph.n_passages,
            "entities": retriever.graph.n_entities,
            "edges": retriever.graph.edge_counts,
            "seed_top_n": s.seed_top_n,
            "entity_share": s.entity_share,
            "damping": s.damping,
            "ppr": "push" if retriever.uses_push else "power",
        }
    if isinstance(retriever, FusionRetriever):
        f = retriever.settings
        weights, caps = f.per_system(retriever.names)
        return {
            "systems": retriever.names,
            "calibration": f.calibration,
            "fusion": f.fusion,
            "weights": weights,
            "pool_cap": caps,
            "child_k": f.child_k,
            "consensus_beta": f.consensus_beta,
            "params": dict(f.params),
        }
    return {}


def _graph_retriever(
    context: BenchContext, *, entities: bool = True, dense_top_n: int | None = None
) -> _Benchmarked:
    """Graph retriever; ``dense_top_n`` 0 = no dense seeds, ``None`` = ``graph_seed_top_n``."""
    graph, seconds = shared_graph(context)
    settings = dataclasses.replace(GRAPH_OPTIONS.read(context.options).graph, use_entities=entities)
    if dense_top_n:
        settings = dataclasses.replace(settings, seed_top_n=dense_top_n)
    retriever = GraphRetriever(
        graph,
        context.dataset.corpus,
        seed_retriever=None if dense_top_n == 0 else context.dense,
        settings=settings,
    )
    return _Benchmarked(retriever, {"graph_build_seconds": round(seconds, 3)})


def _fusion(
    context: BenchContext,
    graph_cap: int | None,
    *,
    calibration: str = "pit",
    fusion: str = "boltzmann",
    with_bm25: bool = False,
) -> _Benchmarked:
    graph = _graph_retriever(context)
    children: dict[str, Retriever] = {"dense": context.dense, "graph": graph.retriever}
    caps: dict[str, int | None] = {"graph": graph_cap}
    if with_bm25:
        children["bm25"] = context.bm25
        caps["bm25"] = BM25_CAP
    options = FUSION_OPTIONS.read(context.options)
    accepted = get_fusion(fusion).defaults
    settings = dataclasses.replace(
        options,
        calibration=calibration,
        fusion=fusion,
        pool_cap=caps,
        params={k: v for k, v in options.params.items() if k in accepted},
    )
    return _Benchmarked(FusionRetriever(children, settings=settings), graph.extras)


def _cap(context: BenchContext) -> int | None:
    """The run's graph pool cap (``graph_pool_cap``)."""
    return GRAPH_OPTIONS.read(context.options).graph.pool_cap


_METHODS: dict[str, tuple[str, Callable[[BenchContext], Retriever]]] = {
    "graph": (
        "entity-graph PPR seeded by query entities + dense top-2 (title links, mentions)",
        lambda c: _graph_retriever(c),
    ),
    "graph-entities": (
        "entity-graph PPR seeded by query entities only",
        lambda c: _graph_retriever(c, dense_top_n=0),
    ),
    "graph-dense5": (
        "entity-graph PPR seeded by the dense top-5 only",
        lambda c: _graph_retriever(c, entities=False, dense_top_n=5),
    ),
    "pit-boltzmann": (
        "dense + graph, PIT calibration, Boltzmann fusion (c=1), graph pool cap 10",
        lambda c: _fusion(c, _cap(c)),
    ),
    "pit-linear": (
        "dense + graph, PIT calibration, linear fusion",
        lambda c: _fusion(c, _cap(c), fusion="linear"),
    ),
    "minmax-linear": (
        "dense + graph, min-max calibration, linear fusion (ablation)",
        lambda c: _fusion(c, _cap(c), calibration="minmax", fusion="linear"),
    ),
    "minmax-boltzmann": (
        "dense + graph, min-max calibration, Boltzmann fusion (ablation)",
        lambda c: _fusion(c, _cap(c), calibration="minmax"),
    ),
    "rrf": (
        "dense + graph, reciprocal rank fusion (k=60)",
        lambda c: _fusion(c, _cap(c), fusion="rrf"),
    ),
    "dbsf": (
        "dense + graph, distribution-based score fusion",
        lambda c: _fusion(c, _cap(c), fusion="dbsf"),
    ),
    "pit-boltzmann-cap5": ("pit-boltzmann, graph pool cap 5", lambda c: _fusion(c, 5)),
    "pit-boltzmann-cap20": ("pit-boltzmann, graph pool cap 20", lambda c: _fusion(c, 20)),
    "pit-boltzmann-nocap": ("pit-boltzmann, no pool cap", lambda c: _fusion(c, None)),
    "pit-boltzmann-3way": (
        "dense + graph + BM25, PIT, Boltzmann (graph cap 10, BM25 cap 20)",
        lambda c: _fusion(c, _cap(c), with_bm25=True),
    ),
}

for _name, (_description, _build) in _METHODS.items():
    register_method(_name, _description)(_build)
