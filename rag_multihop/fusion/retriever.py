"""A retriever that fuses any number of named core retrievers with :func:`fuse_lists`.

Each child is asked for ``child_k`` candidates; the lists are fused (pool cap, calibration,
fusion, consensus boost, see :mod:`rag_multihop.fusion.core`) and the best ``k`` come back.
Every fused candidate carries, for each system that listed it, the raw score under the
system's name and the calibrated one under ``<name>_cal`` (e.g. ``dense``, ``dense_cal``,
``graph``, ``graph_cal``); a system that did not list it has neither key.

Example:
    >>> from rag_multihop import Candidate, Corpus, Passage, Query
    >>> corpus = Corpus([Passage("a", "x"), Passage("b", "y"), Passage("c", "z")])
    >>> class Fixed:
    ...     def __init__(self, scored): self.scored = scored
    ...     def retrieve(self, query, k=10):
    ...         return [Candidate(corpus[i], s, rank=r) for r, (i, s) in enumerate(self.scored, 1)]
    >>> fusion = FusionRetriever(
    ...     {"dense": Fixed([("a", 0.9), ("b", 0.5)]), "graph": Fixed([("b", 0.3), ("c", 0.1)])},
    ...     fusion="linear",
    ... )
    >>> top = fusion.retrieve(Query("q"), k=2)
    >>> [(c.id, c.score) for c in top], dict(top[0].signals)
    ([('b', 0.75), ('a', 0.5)], {'dense': 0.5, 'dense_cal': 0.5, 'graph': 0.3, 'graph_cal': 1.0})
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rag_multihop.fusion.core import (
    FusionResult,
    PoolCap,
    check_pool_cap,
    check_settings,
    check_weights,
    fuse_lists,
)
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

DEFAULT_CHILD_K = 20
"""Candidates each child returns before fusion."""


def candidates_from_fusion(
    result: FusionResult,
    names: Sequence[str],
    passages: Mapping[str, Passage],
    k: int | None = None,
) -> list[Candidate]:
    """Ranked candidates for a :class:`FusionResult`, with ``<name>`` / ``<name>_cal`` signals."""
    return [
        Candidate(
            passages[doc_id],
            float(result.scores[row]),
            rank=row + 1,
            signals=result.signals(row, names),
        )
        for row, doc_id in enumerate(result.ids[:k])
    ]


class FusionRetriever:
    """Fuses named retrievers (dense, BM25, graph, ...) into one ranking.

    Args:
        retrievers: ``{name: retriever}`` with at least two entries; the names become the
            signal names of the fused candidates.
        calibration, fusion: registered names (see :mod:`rag_multihop.fusion`).
        weights: one non-negative weight per retriever, as a sequence in ``retrievers``
            order or a mapping by name; uniform when ``None``.
        pool_cap: per-system pool cap before calibration: an int for all, or a sequence /
            mapping with an int or ``None`` per retriever.
        child_k: candidates asked from each child.
        consensus_beta: multiplies by ``1 + beta * (systems listing the document - 1)``.
        params: fusion parameters (``epsilon``, ``c`` for boltzmann; ``k`` for rrf).
    """

    def __init__(
        self,
        retrievers: Mapping[str, Retriever],
        *,
        calibration: str = "pit",
        fusion: str = "boltzmann",
        weights: Sequence[float] | Mapping[str, float] | None = None,
        pool_cap: PoolCap | Mapping[str, int | None] = None,
        child_k: int = DEFAULT_CHILD_K,
        consensus_beta: float = 0.0,
        params: Mapping[str, float] | None = None,
    ) -> None:
        if not isinstance(retrievers, Mapping):
            raise ValueError(
                "retrievers must be a mapping {name: retriever}; the names become signal names"
            )
        if len(retrievers) < 2:
            raise ValueError(
                f"FusionRetriever needs at least 2 retrievers, got {len(retrievers)} "
                f"({sorted(retrievers)}); use a single retriever directly"
            )
        self.retrievers = dict(retrievers)
        self.names = list(self.retrievers)
        self.calibration = calibration
        self.fusion = fusion
        self.weights = self._by_name(weights, "weights")
        check_weights(self.weights, len(self.names))
        self.pool_cap = self._by_name(pool_cap, "pool_cap")
        check_pool_cap(self.pool_cap, len(self.names))
        self.child_k = check_positive_int(child_k, "child_k")
        check_settings(calibration, fusion, consensus_beta, params)
        self.consensus_beta = float(consensus_beta)
        self.params = dict(params or {})

    def _by_name(self, value: Any, what: str) -> Any:
        if not isinstance(value, Mapping):
            return value
        unknown = sorted(set(value) - set(self.names))
        if unknown:
            raise ValueError(f"{what} names {unknown} are not retrievers; known: {self.names}")
        if what == "weights":
            missing = sorted(set(self.names) - set(value))
            if missing:
                raise ValueError(f"weights has no value for retrievers {missing}")
            return [value[name] for name in self.names]
        return [value.get(name) for name in self.names]

    def fuse(
        self, lists: Mapping[str, Sequence[Candidate]], k: int | None = None
    ) -> list[Candidate]:
        """Fuse already retrieved candidate lists (keyed like ``retrievers``)."""
        missing = [name for name in self.names if name not in lists]
        if missing:
            raise ValueError(
                f"fuse() got no list for system(s) {missing}; this retriever fuses "
                f"{list(self.names)} (give an empty list for a system that found nothing)"
            )
        passages: dict[str, Passage] = {}
        scored = []
        for name in self.names:
            found = lists[name]
            for candidate in found:
                passages.setdefault(candidate.id, candidate.passage)
            scored.append(([c.id for c in found], [c.score for c in found]))
        result = fuse_lists(
            scored,
            calibration=self.calibration,
            fusion=self.fusion,
            weights=self.weights,
            pool_cap=self.pool_cap,
            consensus_beta=self.consensus_beta,
            params=self.params,
        )
        return candidates_from_fusion(result, self.names, passages, k)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        check_positive_int(k, "k")
        lists = {name: r.retrieve(query, k=self.child_k) for name, r in self.retrievers.items()}
        return self.fuse(lists, k)
