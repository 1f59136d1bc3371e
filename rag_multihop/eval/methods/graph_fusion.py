"""Benchmark methods of the entity graph and the calibrated fusion (``rag-multihop bench``).

Registered when :mod:`rag_multihop.eval.registry` loads its core modules:

- ``graph``: :class:`~rag_multihop.graph.GraphRetriever` alone, seeded by the query's
  entities and the dense top-``seed_top_n`` (the defaults);
- ``graph-entities``: seeded by query entities only; ``graph-dense5``: by the dense top 5
  only (the "title-mention PPR seeded by the dense top 5" of issue 4's hint);
- dense + graph fused by :class:`~rag_multihop.fusion.FusionRetriever`, every variant on the
  same child lists (``fusion_child_k`` per child, graph pool capped at ``graph_cap``), one
  knob changed at a time: ``pit-boltzmann`` (ours, the recommended setting),
  ``pit-linear``, ``minmax-linear`` and ``minmax-boltzmann`` (calibration ablations),
  ``rrf`` and ``dbsf`` (rank / distribution fusion of the same lists);
- the pool-cap sweep ``pit-boltzmann-cap5``, ``-cap20``, ``-nocap`` (graph pool 5, 20, all);
- ``pit-boltzmann-3way``: dense + graph + BM25 (BM25 pool capped at 20).

The entity graph is built once per run (``context.artifacts``); its build time and size are
in each graph method's ``extras``. Options (``--option KEY=VALUE``): ``graph_cap`` (10),
``fusion_child_k`` (50), ``seed_top_n`` (2), ``entity_share`` (0.5), ``graph_synonyms``
(0 or 1; 1 embeds entity names with the run's encoder for synonym edges).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from rag_multihop.eval.registry import BenchContext, declare_options, register_method
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.build import EntityGraph, build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query

logger = logging.getLogger(__name__)

DEFAULTS: dict[str, float] = {
    "graph_cap": 10,
    "fusion_child_k": 50,
    "seed_top_n": 2,
    "entity_share": 0.5,
    "graph_synonyms": 0,
    "graph_push_epsilon": 1e-5,
}
"""Benchmark options of this module and their defaults."""

declare_options(
    "graph_fusion",
    *DEFAULTS,
    "graph_ppr",
)

BM25_CAP = 20


def option(context: BenchContext, name: str) -> Any:
    """Option ``name`` from the run's options (CLI strings parsed), else its default."""
    default = DEFAULTS[name]
    value = context.options.get(name, default)
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"option {name} must be a number (default {default:g}), got {value!r}"
        ) from None
    return int(parsed) if float(default).is_integer() and parsed.is_integer() else parsed


def shared_graph(context: BenchContext) -> tuple[EntityGraph, float]:
    """The run's entity graph and the seconds its build took (built on first use)."""
    if "entity_graph" not in context.artifacts:
        start = time.perf_counter()
        graph = build_entity_graph(
            context.dataset.corpus,
            encoder=context.encoder if option(context, "graph_synonyms") else None,
        )
        seconds = time.perf_counter() - start
        logger.info("entity graph of %s built in %.1f s", context.dataset.name, seconds)
        context.artifacts["entity_graph"] = (graph, seconds)
    graph, seconds = context.artifacts["entity_graph"]
    return graph, seconds


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
        return {
            "passages": retriever.graph.n_passages,
            "entities": retriever.graph.n_entities,
            "edges": retriever.graph.edge_counts,
            "seed_top_n": retriever.seed_top_n,
            "entity_share": retriever.entity_share,
            "damping": retriever.damping,
            "ppr": "push" if retriever.uses_push else "power",
        }
    if isinstance(retriever, FusionRetriever):
        return {
            "systems": retriever.names,
            "calibration": retriever.calibration,
            "fusion": retriever.fusion,
            "weights": retriever.weights,
            "pool_cap": retriever.pool_cap,
            "child_k": retriever.child_k,
            "consensus_beta": retriever.consensus_beta,
            "params": retriever.params,
        }
    return {}


def _graph_retriever(
    context: BenchContext, *, entities: bool = True, dense_top_n: int | None = None
) -> _Benchmarked:
    """Graph retriever; ``dense_top_n`` 0 = no dense seeds, ``None`` = option ``seed_top_n``."""
    graph, seconds = shared_graph(context)
    top_n = option(context, "seed_top_n") if dense_top_n is None else dense_top_n
    retriever = GraphRetriever(
        graph,
        context.dataset.corpus,
        seed_retriever=context.dense if top_n > 0 else None,
        seed_top_n=max(top_n, 1),
        entity_share=option(context, "entity_share"),
        use_entities=entities,
        ppr=str(context.options.get("graph_ppr", "auto")),
        push_epsilon=option(context, "graph_push_epsilon"),
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
    retriever = FusionRetriever(
        children,
        calibration=calibration,
        fusion=fusion,
        pool_cap=caps,
        child_k=option(context, "fusion_child_k"),
    )
    return _Benchmarked(retriever, graph.extras)


def _cap(context: BenchContext) -> int:
    return int(option(context, "graph_cap"))


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
