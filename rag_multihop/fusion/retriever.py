"""A retriever that fuses any number of named core retrievers with :func:`fuse_lists`.

Each child is asked for ``child_k`` candidates; the lists are fused by
:func:`~rag_multihop.fusion.core.fuse_candidates` (pool cap, calibration, fusion, consensus
boost under :class:`~rag_multihop.fusion.settings.FusionSettings`) and the best ``k`` come back.
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

import asyncio
import logging
from collections.abc import Mapping, Sequence

from rag_multihop._settings import SettingsField, resolve_settings
from rag_multihop.fusion.core import fuse_candidates
from rag_multihop.fusion.settings import FusionSettings, PoolCaps, Weights
from rag_multihop.protocols import Retriever
from rag_multihop.tracing import span
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


class FusionRetriever:
    """Fuses named retrievers (dense, BM25, graph, ...) into one ranking.

    Args:
        retrievers: ``{name: retriever}`` with at least two entries; the names become the
            signal names of the fused candidates.
        settings: :class:`~rag_multihop.fusion.settings.FusionSettings` (calibration, fusion,
            weights and pool caps by position or by retriever name, ``child_k`` candidates
            asked from each child, consensus boost, fusion parameters).
        calibration, fusion, weights, pool_cap, child_k, consensus_beta, params: override
            the same-named field of ``settings``.
    """

    calibration = SettingsField()
    fusion = SettingsField()
    weights = SettingsField()
    pool_cap = SettingsField()
    child_k = SettingsField()
    consensus_beta = SettingsField()
    params = SettingsField()

    def __init__(
        self,
        retrievers: Mapping[str, Retriever],
        *,
        settings: FusionSettings | None = None,
        calibration: str | None = None,
        fusion: str | None = None,
        weights: Weights = None,
        pool_cap: PoolCaps = None,
        child_k: int | None = None,
        consensus_beta: float | None = None,
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
        for name, retriever in retrievers.items():
            if not callable(getattr(retriever, "retrieve", None)):
                raise TypeError(
                    f"retriever {name!r} has no retrieve(query, k) method: got "
                    f"{type(retriever).__name__}"
                )
        self.retrievers = dict(retrievers)
        self.names = list(self.retrievers)
        self.settings = resolve_settings(
            FusionSettings,
            settings,
            calibration=calibration,
            fusion=fusion,
            weights=weights,
            pool_cap=pool_cap,
            child_k=child_k,
            consensus_beta=consensus_beta,
            params=params,
        )
        self.settings.per_system(self.names)  # weights and caps fit these retrievers

    def fuse(
        self, lists: Mapping[str, Sequence[Candidate]], k: int | None = None
    ) -> list[Candidate]:
        """Fuse already retrieved candidate lists (keyed like ``retrievers``); see
        :func:`~rag_multihop.fusion.core.fuse_candidates`."""
        missing = [name for name in self.names if name not in lists]
        if missing:
            raise ValueError(
                f"fuse() got no list for system(s) {missing}; this retriever fuses "
                f"{list(self.names)} (give an empty list for a system that found nothing)"
            )
        return fuse_candidates({n: lists[n] for n in self.names}, self.settings, top_n=k)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        k = check_positive_int(k, "k")
        child_k = self.settings.child_k
        with span("fusion.run", k=k, systems=tuple(self.names)) as record:
            lists = {name: self._search(name, query, child_k) for name in self.names}
            fused = self.fuse(lists, k)
            record.set(returned=len(fused))
        return fused

    def _search(self, name: str, query: Query, k: int) -> list[Candidate]:
        """One child's candidates, in a ``fusion.search`` span."""
        with span("fusion.search", system=name, k=k) as record:
            found = self.retrievers[name].retrieve(query, k=k)
            record.set(candidates=len(found))
        return found

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """:meth:`retrieve` in a worker thread (every child's search off the event loop)."""
        return await asyncio.to_thread(self.retrieve, query, k)
