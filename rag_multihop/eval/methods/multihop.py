"""The ``multihop`` benchmark method (:class:`~rag_multihop.multihop.MultiHopRetriever`).

Every field of :class:`~rag_multihop.multihop.MultiHopSettings` is an option
``multihop_<field>`` (``--option multihop_graph_tail=false``), so each part can be switched
off for the ablation. The entity graph is the run's shared one (built once per run, as for
``graph`` and ``pit-boltzmann``); the title index and link graph are built by the method
and their build time is reported.

``bench_extras()`` reports the settings, the link graph (links, build seconds), per question
type and per number of gold passages R@2 / R@5 and how often the pair is all gold, and the
mean number of candidates per query.

Example:
    >>> MULTIHOP_OPTIONS.read({"multihop_first_hops": "3", "multihop_graph_tail": "no"}).first_hops
    3
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.groups import grouped_percentages
from rag_multihop.eval.methods.graph_fusion import shared_graph
from rag_multihop.eval.metrics import recall_at_k
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.multihop import MultiHopRetriever, MultiHopSettings, MultiHopTrace
from rag_multihop.types import Candidate, Query

MULTIHOP_OPTIONS = declare_settings("multihop", MultiHopSettings, prefix="multihop_")
"""Every :class:`~rag_multihop.multihop.MultiHopSettings` field as ``multihop_<field>``."""


class MultiHopBenchRetriever:
    """Runs a :class:`MultiHopRetriever` per question and keeps its traces for the report."""

    def __init__(
        self,
        retriever: MultiHopRetriever,
        questions: Sequence[QAExample],
        build: dict[str, float],
    ) -> None:
        self.retriever = retriever
        self.build = build
        self._questions = {q.id: q for q in questions}
        self.traces: list[MultiHopTrace] = []
        self.rankings: list[list[str]] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        result = self.retriever.run(query, k)
        self.traces.append(result.trace)
        self.rankings.append([c.id for c in result.candidates])
        return result.candidates

    def _groups(self) -> tuple[dict[str, Any], dict[str, Any]]:
        rows = []
        for trace, ranking in zip(self.traces, self.rankings, strict=True):
            question = self._questions.get(trace.query_id)
            if question is None:
                continue
            gold, ids = question.gold, set(question.gold_ids)
            row = {
                "R@2": recall_at_k(ranking, gold, 2),
                "R@5": recall_at_k(ranking, gold, 5),
                "pair_all_gold": float(bool(trace.pair) and set(trace.pair) <= ids),
                "named_gold": float(any(i in ids for _, named in trace.mentions for i in named)),
            }
            rows.append((question, row))
        return grouped_percentages(rows)

    def bench_extras(self) -> dict[str, Any]:
        """Settings, link graph, build times and the per-type and per-gold-count tables."""
        extras: dict[str, Any] = {
            "settings": dataclasses.asdict(self.retriever.settings),
            "links": self.retriever.links.n_links,
            "build_seconds": self.build,
            "candidates_mean": round(float(np.mean([t.candidates for t in self.traces])), 1)
            if self.traces
            else None,
        }
        extras["by_type"], extras["by_gold_count"] = self._groups()
        return extras


@register_method(
    "multihop",
    "LLM-free multi-hop: best (first hop, partner) pair by names, title links and residual "
    "similarity for ranks 1-2; link fill fused with entity-graph PPR seeded by the pair after",
)
def build_multihop(context: BenchContext) -> MultiHopBenchRetriever:
    settings = MULTIHOP_OPTIONS.read(context.options)
    needs_graph = settings.graph_tail or settings.entity_weight > 0
    graph, graph_seconds = shared_graph(context) if needs_graph else (None, 0.0)
    start = time.perf_counter()
    retriever = MultiHopRetriever(
        context.dataset.corpus,
        context.passage_vectors,
        index=context.dense.index,
        encoder=context.encoder,
        graph=graph,
        settings=settings,
        lexical=context.bm25 if settings.lexical_weight > 0 else None,
    )
    build = {
        "entity_graph": round(graph_seconds, 3),
        "titles_and_links": round(time.perf_counter() - start, 3),
    }
    return MultiHopBenchRetriever(retriever, context.dataset.questions, build)
