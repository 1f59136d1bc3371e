"""Fuse N ranked score lists: validate, cap each pool, calibrate, fuse, boost consensus.

:func:`fuse_lists` is the one entry point; it is a pure function over ``(ids, scores)`` pairs
and returns a :class:`FusionResult` (documents best first, with every system's raw and
calibrated score). The steps, in order:

1. **Validate** every list: ids and scores of one length, finite scores, no duplicate id.
   At least two lists are needed. An *empty* list is allowed (a system that found nothing,
   e.g. BM25 with no matching term): it contributes nothing.
2. **Pool cap** (``pool_cap``, PhaseGraph's "divergent_top_k"): each system keeps only its
   ``cap`` best documents (by raw score, ties in list order); one int for all systems or
   one per system (``None`` = no cap).
3. **Calibrate** each list on its own (:mod:`~rag_multihop.fusion.calibration`).
4. **Fuse** (:mod:`~rag_multihop.fusion.functions`) with normalised weights. A document
   missing from a list counts as below all of that list's documents (calibrated 0.0).
5. **Consensus boost** ``beta``: the fused score is multiplied by ``1 + beta * (m - 1)``,
   where ``m`` is the number of systems that listed the document.

Ties in the fused score keep first-appearance order (list 0 first, then list 1, ...).

Example:
    >>> dense = (["a", "b", "c"], [0.9, 0.8, 0.1])
    >>> graph = (["c", "d"], [0.7, 0.2])
    >>> result = fuse_lists([dense, graph], calibration="pit", fusion="linear")
    >>> list(result.ids), result.scores.round(3).tolist()
    (['c', 'a', 'b', 'd'], [0.667, 0.5, 0.333, 0.25])
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag_multihop.fusion.calibration import calibrate, check_calibration
from rag_multihop.fusion.functions import ScoreTable
from rag_multihop.fusion.settings import (
    FusionSettings,
    PoolCap,
    check_pool_cap,
    check_settings,
    check_weights,
)
from rag_multihop.tracing import span
from rag_multihop.types import Candidate

logger = logging.getLogger(__name__)

ScoredList = tuple[Sequence[str], Sequence[float] | np.ndarray]
"""One system's candidates: ids and their raw scores (higher is better), in list order."""


@dataclass(frozen=True)
class FusionResult:
    """Fused documents, best first.

    ``raw`` and ``calibrated`` are ``(n_docs, n_systems)``; ``raw`` is ``NaN`` and
    ``calibrated`` 0.0 where a system did not list the document (after the pool cap).
    """

    ids: tuple[str, ...]
    scores: np.ndarray
    raw: np.ndarray
    calibrated: np.ndarray
    present: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def signals(self, row: int, names: Sequence[str]) -> dict[str, float]:
        """``{name: raw, name_cal: calibrated}`` of document ``row`` for each system listing it.

        >>> result = fuse_lists([(["a"], [0.4]), (["b"], [2.0])], fusion="linear")
        >>> result.signals(0, ["dense", "graph"])
        {'dense': 0.4, 'dense_cal': 1.0}
        """
        out: dict[str, float] = {}
        for s, name in enumerate(names):
            if self.present[row, s]:
                out[name] = float(self.raw[row, s])
                out[f"{name}_cal"] = float(self.calibrated[row, s])
        return out


def _check_list(index: int, scored: ScoredList) -> tuple[list[str], np.ndarray]:
    ids, scores = scored
    id_list = list(ids)
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size != len(id_list):
        raise ValueError(
            f"list {index}: {len(id_list)} ids but scores of shape {values.shape}; give one "
            "score per id"
        )
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(
            f"list {index}: scores contain NaN or inf at positions {bad[:5].tolist()} "
            f"({bad.size} in all); every score must be finite"
        )
    if len(set(id_list)) != len(id_list):
        dupes = sorted(doc_id for doc_id, n in Counter(id_list).items() if n > 1)
        raise ValueError(
            f"list {index}: duplicate ids {dupes[:5]}; each list must name a document at most once"
        )
    return id_list, values


def align_lists(lists: Sequence[ScoredList], *, calibration: str = "pit") -> ScoreTable:
    """Validate, calibrate each list and align them into a :class:`ScoreTable`.

    Rows follow first appearance (list 0's order, then new ids of list 1, ...).
    """
    check_calibration(calibration)
    checked = [_check_list(i, scored) for i, scored in enumerate(lists)]
    row_of: dict[str, int] = {}
    for id_list, _ in checked:
        for doc_id in id_list:
            row_of.setdefault(doc_id, len(row_of))
    raw = np.full((len(row_of), len(checked)), np.nan)
    calibrated = np.zeros_like(raw)
    for s, (id_list, values) in enumerate(checked):
        rows = np.array([row_of[d] for d in id_list], dtype=np.int64)
        raw[rows, s] = values
        calibrated[rows, s] = calibrate(calibration, values)
    return ScoreTable.from_columns(list(row_of), raw=raw, calibrated=calibrated)


def _cap(scored: ScoredList, cap: int | None) -> ScoredList:
    ids, scores = scored
    values = np.asarray(scores, dtype=np.float64)
    if cap is None or values.size <= cap:
        return scored
    keep = np.sort(np.argsort(-values, kind="stable")[:cap])
    id_list = list(ids)
    return [id_list[i] for i in keep], values[keep]


def fuse_lists(
    lists: Sequence[ScoredList],
    *,
    calibration: str = "pit",
    fusion: str = "boltzmann",
    weights: Sequence[float] | None = None,
    pool_cap: PoolCap = None,
    consensus_beta: float = 0.0,
    params: Mapping[str, float] | None = None,
) -> FusionResult:
    """Fuse ``lists`` (see the module docstring for the steps and the defaults).

    Args:
        lists: two or more ``(ids, scores)`` pairs, one per system.
        calibration: a name of :data:`~rag_multihop.fusion.calibration.CALIBRATIONS`.
        fusion: a name of :data:`~rag_multihop.fusion.functions.FUSIONS`.
        weights: one non-negative weight per list (normalised to sum 1); uniform when ``None``.
        pool_cap: keep only each system's best ``cap`` documents before calibrating.
        consensus_beta: ``>= 0``; multiplies by ``1 + beta * (systems listing it - 1)``.
        params: fusion parameters (``epsilon``/``c`` for boltzmann, ``k`` for rrf).

    Raises:
        ValueError: fewer than two lists, a malformed list (see :func:`align_lists`), bad
            weights or caps, an unknown name, or a calibration outside ``[0, 1]`` for a fusion
            that needs probabilities.
    """
    method, checked_params = check_settings(calibration, fusion, consensus_beta, params)
    if len(lists) < 2:
        raise ValueError(
            f"fusion needs at least 2 score lists, got {len(lists)}; with one system, use its "
            "ranking as it is"
        )
    norm_weights = check_weights(weights, len(lists))
    caps = check_pool_cap(pool_cap, len(lists))
    for i, scored in enumerate(lists):
        _check_list(i, scored)
    capped = [_cap(scored, cap) for scored, cap in zip(lists, caps, strict=True)]
    table = align_lists(capped, calibration=calibration)
    if not table.ids:
        logger.debug("every list is empty; nothing to fuse")
    scores = method.function(table, norm_weights, **checked_params)
    if consensus_beta > 0:
        scores = scores * (1.0 + consensus_beta * (table.found_by - 1))
    order = np.argsort(-scores, kind="stable")
    return FusionResult(
        ids=tuple(table.ids[i] for i in order),
        scores=scores[order],
        raw=table.raw[order],
        calibrated=table.calibrated[order],
        present=table.present[order],
    )


def fuse_candidates(
    lists: Mapping[str, Sequence[Candidate]],
    settings: FusionSettings | None = None,
    *,
    top_n: int | None = None,
) -> list[Candidate]:
    """Fuse named candidate lists (``{system: candidates}``) into one ranking, best first.

    The one place that turns candidates into score lists and back: a passage listed twice
    by one system keeps its best-scoring candidate (scores are finite by construction of
    :class:`~rag_multihop.types.Candidate`); the lists are fused by :func:`fuse_lists` under
    ``settings`` (weights and pool caps may be keyed by system name); each fused candidate
    keeps the passage and the signals of the systems that listed it (after the pool cap)
    and gains ``<system>`` (raw score) and ``<system>_cal`` (calibrated) per such system.
    At most ``top_n`` come back. Inputs are not changed.

    >>> from rag_multihop.types import Passage
    >>> def ranked(*scored):
    ...     return [Candidate(Passage(i, i), s, signals={"seen": 1.0}) for i, s in scored]
    >>> fused = fuse_candidates(
    ...     {"dense": ranked(("a", 0.9), ("b", 0.5), ("a", 0.7)), "graph": ranked(("b", 0.3))},
    ...     FusionSettings(fusion="linear"),
    ... )
    >>> [(c.id, c.rank, c.score) for c in fused], list(fused[0].signals)
    ([('b', 1, 0.75), ('a', 2, 0.5)], ['seen', 'dense', 'dense_cal', 'graph', 'graph_cal'])
    """
    settings = settings if settings is not None else FusionSettings()
    names = list(lists)
    weights, caps = settings.per_system(names)
    best_by_system: list[dict[str, Candidate]] = []
    for name in names:
        best: dict[str, Candidate] = {}
        listed = lists[name]
        if isinstance(listed, str | bytes | Candidate) or not isinstance(listed, Iterable):
            raise TypeError(
                f"system {name!r} gave a {type(listed).__name__}, not a list of Candidates "
                "(give an empty list for a system that found nothing)"
            )
        for candidate in listed:
            if not isinstance(candidate, Candidate):
                raise TypeError(
                    f"system {name!r} listed a {type(candidate).__name__}, not a Candidate"
                )
            kept = best.get(candidate.id)
            if kept is None or candidate.score > kept.score:
                best[candidate.id] = candidate
        best_by_system.append(best)
    with span(
        "fusion.fuse",
        systems=tuple(names),
        calibration=settings.calibration,
        fusion=settings.fusion,
        candidates=tuple(len(best) for best in best_by_system),
    ) as record:
        result = fuse_lists(
            [(list(best), [c.score for c in best.values()]) for best in best_by_system],
            calibration=settings.calibration,
            fusion=settings.fusion,
            weights=weights,
            pool_cap=caps,
            consensus_beta=settings.consensus_beta,
            params=settings.params,
        )
        record.set(
            pool_caps=tuple(-1 if cap is None else cap for cap in caps),
            pool_size=len(result),
        )
    fused = []
    for row, doc_id in enumerate(result.ids[:top_n]):
        listed = [best[doc_id] for s, best in enumerate(best_by_system) if result.present[row, s]]
        signals: dict[str, float] = {}
        for candidate in listed:
            signals.update(candidate.signals)
        signals.update(result.signals(row, names))
        fused.append(Candidate(listed[0].passage, float(result.scores[row]), row + 1, signals))
    return fused
