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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.fusion.calibration import calibrate, check_calibration, is_bounded
from rag_multihop.fusion.functions import FusionMethod, ScoreTable, get_fusion
from rag_multihop.types import Candidate
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

ScoredList = tuple[Sequence[str], Sequence[float] | np.ndarray]
"""One system's candidates: ids and their raw scores (higher is better), in list order."""

PoolCap = int | Sequence[int | None] | None
"""A pool cap for every system, one per system (``None`` = uncapped), or no cap at all."""


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


def check_weights(weights: Sequence[float] | None, n_lists: int) -> np.ndarray:
    """Weights normalised to sum 1 (uniform when ``None``), or ``ValueError``.

    >>> check_weights([1, 3], 2).tolist()
    [0.25, 0.75]
    """
    if weights is None:
        return np.full(n_lists, 1.0 / n_lists)
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim != 1 or array.size != n_lists:
        raise ValueError(
            f"weights has {array.size} value(s) but there are {n_lists} lists; give one "
            f"non-negative weight per list, got {list(np.atleast_1d(array))}"
        )
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"weights must be finite and >= 0, got {array.tolist()}")
    if array.sum() == 0:
        raise ValueError(f"weights must not all be 0, got {array.tolist()}")
    return array / array.sum()


def check_pool_cap(pool_cap: PoolCap, n_lists: int) -> list[int | None]:
    """One cap (positive int or ``None``) per list, or ``ValueError``."""
    caps: list[Any] = (
        [pool_cap] * n_lists if pool_cap is None or isinstance(pool_cap, int) else list(pool_cap)
    )
    if len(caps) != n_lists:
        raise ValueError(
            f"pool_cap has {len(caps)} value(s) but there are {n_lists} lists; give one int "
            "for all lists or one int/None per list"
        )
    for cap in caps:
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise ValueError(f"pool_cap values must be positive integers or None, got {cap!r}")
    return caps


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


def check_settings(
    calibration: str,
    fusion: str,
    consensus_beta: float = 0.0,
    params: Mapping[str, float] | None = None,
) -> tuple[FusionMethod, dict[str, float]]:
    """The fusion method and its full parameters, after checking that the settings combine.

    >>> method, full = check_settings("pit", "boltzmann", params={"c": 1.0})
    >>> method.name, full
    ('boltzmann', {'epsilon': 0.001, 'c': 1.0})
    """
    method = get_fusion(fusion)
    check_calibration(calibration)
    if method.needs_bounded and not is_bounded(calibration):
        raise ValueError(
            f"fusion {fusion!r} needs calibrated scores in [0, 1]; calibration {calibration!r} "
            "is unbounded; use pit or minmax"
        )
    if (
        isinstance(consensus_beta, bool)
        or not isinstance(consensus_beta, int | float)
        or not 0 <= consensus_beta < float("inf")
    ):
        raise ValueError(f"consensus_beta must be a finite number >= 0, got {consensus_beta!r}")
    if consensus_beta > 0 and method.uses_calibration and not is_bounded(calibration):
        raise ValueError(
            f"consensus_beta > 0 multiplies fused scores and needs non-negative ones; "
            f"calibration {calibration!r} can be negative; use pit or minmax, or beta 0"
        )
    return method, method.check_params(dict(params or {}))


DEFAULT_CHILD_K = 20
"""Candidates each child retriever returns before fusion (:class:`FusionSettings`)."""

Weights = Sequence[float] | Mapping[str, float] | None
"""One weight per system, as a sequence in system order or a mapping by name; uniform
when ``None``."""

PoolCaps = PoolCap | Mapping[str, int | None]
"""A :data:`PoolCap`, or a mapping from system name to its cap (missing names: no cap)."""


@dataclass(frozen=True)
class FusionSettings:
    """Every knob of the calibrated fusion, with its default, validated once.

    Attributes:
        calibration: a name of :data:`~rag_multihop.fusion.calibration.CALIBRATIONS`.
        fusion: a name of :data:`~rag_multihop.fusion.functions.FUSIONS`.
        weights: one non-negative weight per system (sequence or mapping by name),
            normalised to sum 1; uniform when ``None``.
        pool_cap: each system keeps only its ``cap`` best documents before calibrating: one
            int for all, a sequence or a mapping by name (``None`` = no cap).
        child_k: candidates each child retriever returns (:class:`FusionRetriever
            <rag_multihop.fusion.retriever.FusionRetriever>`).
        consensus_beta: ``>= 0``; multiplies by ``1 + beta * (systems listing it - 1)``.
        params: fusion parameters (``epsilon`` and ``c``, the Boltzmann temperature factor,
            for ``boltzmann``; ``k`` for ``rrf``); the fusion's defaults fill the rest.

    >>> FusionSettings(fusion="rrf", params={"c": 2.0})
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter(s) ['c'] for fusion 'rrf'; accepted: k
    """

    calibration: str = "pit"
    fusion: str = "boltzmann"
    weights: Weights = None
    pool_cap: PoolCaps = None
    child_k: int = DEFAULT_CHILD_K
    consensus_beta: float = 0.0
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_settings(self.calibration, self.fusion, self.consensus_beta, self.params)
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        if isinstance(self.weights, Mapping):
            object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
            check_weights(list(self.weights.values()), len(self.weights))
        elif self.weights is not None:
            object.__setattr__(self, "weights", tuple(self.weights))
            check_weights(self.weights, len(self.weights))
        if isinstance(self.pool_cap, Mapping):
            object.__setattr__(self, "pool_cap", MappingProxyType(dict(self.pool_cap)))
            check_pool_cap(list(self.pool_cap.values()), len(self.pool_cap))
        elif self.pool_cap is not None and not isinstance(self.pool_cap, int):
            object.__setattr__(self, "pool_cap", tuple(self.pool_cap))
            check_pool_cap(self.pool_cap, len(self.pool_cap))
        else:
            check_pool_cap(self.pool_cap, 1)
        check_positive_int(self.child_k, "child_k")

    def per_system(self, names: Sequence[str]) -> tuple[list[float] | None, list[int | None]]:
        """``weights`` and ``pool_cap`` as one value per system of ``names`` (in order),
        or ``ValueError`` when a mapping names an unknown system, weights miss one, or a
        sequence has the wrong length."""
        weights = _by_name(self.weights, names, "weights")
        caps = _by_name(self.pool_cap, names, "pool_cap")
        if weights is not None:
            check_weights(weights, len(names))
        return weights, check_pool_cap(caps, len(names))


def _by_name(value: Any, names: Sequence[str], what: str) -> Any:
    if not isinstance(value, Mapping):
        return None if value is None else value if isinstance(value, int) else list(value)
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise ValueError(f"{what} names {unknown} are not systems; known: {list(names)}")
    if what == "weights":
        missing = sorted(set(names) - set(value))
        if missing:
            raise ValueError(f"weights has no value for systems {missing}")
        return [value[name] for name in names]
    return [value.get(name) for name in names]


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
        for candidate in lists[name]:
            if not isinstance(candidate, Candidate):
                raise TypeError(
                    f"system {name!r} listed a {type(candidate).__name__}, not a Candidate"
                )
            kept = best.get(candidate.id)
            if kept is None or candidate.score > kept.score:
                best[candidate.id] = candidate
        best_by_system.append(best)
    result = fuse_lists(
        [(list(best), [c.score for c in best.values()]) for best in best_by_system],
        calibration=settings.calibration,
        fusion=settings.fusion,
        weights=weights,
        pool_cap=caps,
        consensus_beta=settings.consensus_beta,
        params=settings.params,
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
