"""Calibration of one system's score list onto a common scale, as a registry of functions.

Every calibration maps a 1-D array of finite raw scores (one system's candidate list) to a
new array of the same length; the input is never modified. Higher is better before and after.

- ``pit``: probability integral transform, the empirical CDF within the list. The score of
  the item with ascending rank ``r`` (1 = lowest, ties share their average rank) becomes
  ``r / n``: the best item gets 1.0, the worst ``1 / n``. A constant list gives every item
  ``(n + 1) / (2n)``; a single item gets 1.0.
- ``minmax``: ``(s - min) / (max - min)``; a constant list gives 1.0 everywhere.
- ``zscore``: ``(s - mean) / std`` (population std); a constant list gives 0.0 everywhere.
  Unbounded, so it cannot feed :func:`~rag_multihop.fusion.functions.boltzmann`.
- ``max``: ``s / max(|s|)`` (raw scores on their own scale, largest magnitude 1); an
  all-zero list stays 0.0.

Example:
    >>> pit(np.array([0.2, 0.9, 0.5, 0.5]))
    array([0.25 , 1.   , 0.625, 0.625])
    >>> calibrate("minmax", np.array([1.0, 3.0, 2.0]))
    array([0. , 1. , 0.5])
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import numpy as np

Calibration = Callable[[np.ndarray], np.ndarray]
"""A calibration: raw scores of one list in, calibrated scores out (same length, new array)."""

_CALIBRATIONS: dict[str, Calibration] = {}
# Calibrations whose output always lies in [0, 1] (Boltzmann fusion needs a probability).
_BOUNDED: set[str] = set()

CALIBRATIONS = MappingProxyType(_CALIBRATIONS)
"""Registered calibrations by name (read-only view; add with :func:`register_calibration`)."""


def register_calibration(name: str, *, bounded: bool) -> Callable[[Calibration], Calibration]:
    """Decorator registering a calibration; ``bounded`` means its output lies in ``[0, 1]``."""

    def decorator(function: Calibration) -> Calibration:
        _CALIBRATIONS[name] = function
        if bounded:
            _BOUNDED.add(name)
        else:
            _BOUNDED.discard(name)
        return function

    return decorator


def check_calibration(name: str) -> str:
    """``name`` if it is a registered calibration, else ``ValueError`` listing the choices."""
    if name not in _CALIBRATIONS:
        raise ValueError(
            f"unknown calibration {name!r}; choose from: {', '.join(sorted(_CALIBRATIONS))}"
        )
    return name


def is_bounded(name: str) -> bool:
    """Whether calibration ``name`` maps every list into ``[0, 1]``."""
    return check_calibration(name) in _BOUNDED


def calibrate(name: str, scores: np.ndarray) -> np.ndarray:
    """Apply calibration ``name`` to one list of finite scores (an empty list stays empty)."""
    function = _CALIBRATIONS[check_calibration(name)]
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(
            f"calibration {name!r}: scores contain NaN or inf at positions {bad[:5].tolist()} "
            f"({bad.size} in all); every score must be finite"
        )
    return function(values)


def scale_down(values: np.ndarray) -> np.ndarray:
    """``values / max(|values|)`` (unchanged when all zero): the same order and ratios, but
    differences and squares can no longer overflow (scores near 1e308 stay finite).

    >>> scale_down(np.array([1e308, -1e308, 0.0]))
    array([ 1., -1.,  0.])
    """
    peak = float(np.abs(values).max()) if values.size else 0.0
    return values / peak if peak > 0.0 else values


@register_calibration("pit", bounded=True)
def pit(scores: np.ndarray) -> np.ndarray:
    """Percentile rank within the list: ascending average rank / n (best item 1.0).

    >>> pit(np.array([3.0, 1.0, 2.0]))
    array([1.        , 0.33333333, 0.66666667])
    """
    values = np.asarray(scores, dtype=np.float64)
    return average_ranks(values) / values.size


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ascending ranks, tied values sharing the average of their ranks (what
    ``scipy.stats.rankdata(values, method="average")`` gives, without its per-call cost
    and its ~1 s import).

    >>> average_ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    array([3.5, 1. , 3.5, 2. ])
    """
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    ends = np.append(starts[1:], values.size)
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


@register_calibration("minmax", bounded=True)
def minmax(scores: np.ndarray) -> np.ndarray:
    """``(s - min) / (max - min)``; a constant list maps to 1.0.

    >>> minmax(np.array([5.0, 5.0]))
    array([1., 1.])
    """
    values = scale_down(np.asarray(scores, dtype=np.float64))
    low, high = float(values.min()), float(values.max())
    if high == low:
        return np.ones_like(values)
    return (values - low) / (high - low)


@register_calibration("zscore", bounded=False)
def zscore(scores: np.ndarray) -> np.ndarray:
    """``(s - mean) / std`` with the population std; a constant list maps to 0.0.

    >>> zscore(np.array([1.0, 3.0]))
    array([-1.,  1.])
    """
    values = scale_down(np.asarray(scores, dtype=np.float64))
    std = float(values.std())
    if std == 0.0:
        return np.zeros_like(values)
    return (values - values.mean()) / std


@register_calibration("max", bounded=False)
def max_scale(scores: np.ndarray) -> np.ndarray:
    """``s / max(|s|)``: raw scores on their own scale; an all-zero list stays 0.0.

    >>> max_scale(np.array([2.0, 1.0, -4.0]))
    array([ 0.5 ,  0.25, -1.  ])
    """
    values = np.asarray(scores, dtype=np.float64)
    peak = float(np.abs(values).max())
    if peak == 0.0:
        return np.zeros_like(values)
    return values / peak
