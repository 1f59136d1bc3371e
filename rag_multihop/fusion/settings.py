"""Every knob of the calibrated fusion (:class:`FusionSettings`), with the checks it runs once.

:func:`~rag_multihop.fusion.core.fuse_lists` and
:func:`~rag_multihop.fusion.core.fuse_candidates` run the same checks on their arguments:
:func:`check_settings` (calibration, fusion, consensus boost and parameters combine),
:func:`check_weights` and :func:`check_pool_cap`.

Example:
    >>> FusionSettings().calibration, FusionSettings().fusion, FusionSettings().child_k
    ('pit', 'boltzmann', 20)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.fusion.calibration import check_calibration, is_bounded
from rag_multihop.fusion.functions import FusionMethod, get_fusion
from rag_multihop.validation import check_positive_int

PoolCap = int | Sequence[int | None] | None
"""A pool cap for every system, one per system (``None`` = uncapped), or no cap at all."""


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
