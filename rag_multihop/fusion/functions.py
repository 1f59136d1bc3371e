"""Fusion of N aligned, calibrated score lists into one score per document, as a registry.

A :class:`ScoreTable` holds the union of the documents of all lists (rows) against the
systems (columns): raw scores, calibrated scores and a ``present`` mask. **A document missing
from a list** has no raw score (``NaN``) and calibrated score 0.0 for that system, i.e. it
counts as below every document the system listed: it contributes nothing to ``linear``,
``rrf`` and ``dbsf``, and has probability 0 under that system in ``boltzmann``.

Every fusion function has the signature ``fn(table, weights, **params) -> scores``, where
``weights`` are non-negative and sum to 1, and ``params`` are the keyword-only parameters of
the function (their defaults are the documented defaults):

- ``linear``: ``sum_s w_s * cal_s(d)``.
- ``boltzmann`` (PhaseGraph): per system, energy ``E = -log(p + epsilon)`` of each listed
  document's calibrated percentile ``p``, temperature ``T_s = c * mean(E)`` over that system's
  list, probabilities ``P_s(d) = exp(-E_d / T_s) / Z_s`` (``= (p + epsilon)^(1/T_s)``,
  normalised); fused score ``sum_s w_s * P_s(d)``. Needs calibrated values in ``[0, 1]``.
  Defaults ``epsilon = 1e-3`` and ``c = 1.0``, see ``docs/fusion_graph.md``.
- ``rrf``: reciprocal rank fusion ``sum_s w_s / (k + rank_s(d))``, 1-based ranks by raw score
  within each list (ties share their average rank), ``k = 60``. Ignores calibration.
- ``dbsf``: distribution-based score fusion: per list ``(s - (mu - 3 sigma)) / (6 sigma)``
  (population sigma; a constant list gives 0.5), then ``sum_s w_s * value``. Ignores
  calibration.

Example:
    >>> table = ScoreTable.from_columns(
    ...     ("a", "b", "c"),
    ...     raw=np.array([[0.9, np.nan], [0.5, 2.0], [np.nan, 1.0]]),
    ...     calibrated=np.array([[1.0, 0.0], [0.5, 1.0], [0.0, 0.5]]),
    ... )
    >>> linear(table, np.array([0.5, 0.5]))
    array([0.5 , 0.75, 0.25])
    >>> rrf(table, np.array([0.5, 0.5]), k=1).round(4)
    array([0.25  , 0.4167, 0.1667])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.fusion.calibration import average_ranks, scale_down


@dataclass(frozen=True)
class ScoreTable:
    """Documents (rows) by systems (columns): raw scores, calibrated scores, presence.

    ``raw`` is ``NaN`` and ``calibrated`` is 0.0 where a document is missing from a list.
    Build with :meth:`from_columns` or :func:`rag_multihop.fusion.core.align_lists`.
    """

    ids: tuple[str, ...]
    raw: np.ndarray
    calibrated: np.ndarray
    present: np.ndarray

    @classmethod
    def from_columns(
        cls, ids: Sequence[str], *, raw: np.ndarray, calibrated: np.ndarray
    ) -> ScoreTable:
        """A table from ``(n_docs, n_systems)`` arrays; presence is where ``raw`` is not NaN."""
        raw_array = np.array(raw, dtype=np.float64)
        present = ~np.isnan(raw_array)
        calibrated_array = np.where(present, np.asarray(calibrated, dtype=np.float64), 0.0)
        if raw_array.ndim != 2 or raw_array.shape != calibrated_array.shape:
            raise ValueError(
                f"raw and calibrated must be (n_docs, n_systems) arrays of one shape, got "
                f"{raw_array.shape} and {calibrated_array.shape}"
            )
        if raw_array.shape[0] != len(ids):
            raise ValueError(f"got {len(ids)} ids for {raw_array.shape[0]} rows")
        for array in (raw_array, calibrated_array, present):
            array.setflags(write=False)
        return cls(tuple(ids), raw_array, calibrated_array, present)

    @property
    def n_systems(self) -> int:
        return int(self.raw.shape[1])

    @property
    def found_by(self) -> np.ndarray:
        """Number of systems that listed each document."""
        return self.present.sum(axis=1)


FusionFunction = Callable[..., np.ndarray]
"""``fn(table: ScoreTable, weights: np.ndarray, **params) -> np.ndarray`` (one score per row)."""


@dataclass(frozen=True)
class FusionMethod:
    """A registered fusion: its function, its parameters with defaults, and what it reads."""

    name: str
    function: FusionFunction
    defaults: MappingProxyType[str, float]
    uses_calibration: bool
    needs_bounded: bool

    def check_params(self, params: dict[str, Any]) -> dict[str, float]:
        """``params`` merged over the defaults; unknown names or bad values raise ``ValueError``."""
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            accepted = ", ".join(sorted(self.defaults)) or "none"
            raise ValueError(
                f"unknown parameter(s) {unknown} for fusion {self.name!r}; accepted: {accepted}"
            )
        merged = {**self.defaults, **params}
        for key, value in merged.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"fusion parameter {key} must be a number, got {value!r}")
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"fusion parameter {key} must be > 0 and finite, got {value!r}")
        return {key: float(value) for key, value in merged.items()}


_FUSIONS: dict[str, FusionMethod] = {}

FUSIONS = MappingProxyType(_FUSIONS)
"""Registered fusions by name (read-only view; add with :func:`register_fusion`)."""


def register_fusion(
    name: str, *, uses_calibration: bool, needs_bounded: bool = False
) -> Callable[[FusionFunction], FusionFunction]:
    """Decorator registering ``fn(table, weights, **params)``; keyword-only params are knobs."""

    def decorator(function: FusionFunction) -> FusionFunction:
        defaults = {
            p.name: p.default
            for p in inspect.signature(function).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        _FUSIONS[name] = FusionMethod(
            name, function, MappingProxyType(defaults), uses_calibration, needs_bounded
        )
        return function

    return decorator


def get_fusion(name: str) -> FusionMethod:
    """The registered fusion ``name``, else ``ValueError`` listing the choices."""
    if name not in _FUSIONS:
        raise ValueError(f"unknown fusion {name!r}; choose from: {', '.join(sorted(_FUSIONS))}")
    return _FUSIONS[name]


@register_fusion("linear", uses_calibration=True)
def linear(table: ScoreTable, weights: np.ndarray) -> np.ndarray:
    """Weighted sum of calibrated scores (missing counts 0)."""
    return np.asarray(table.calibrated @ weights, dtype=np.float64)


def boltzmann_probabilities(
    percentiles: np.ndarray, *, epsilon: float = 1e-3, c: float = 1.0
) -> tuple[np.ndarray, float]:
    """Boltzmann probabilities of one list of percentiles in ``[0, 1]`` and its temperature.

    ``E = -log(p + epsilon)``, ``T = c * mean(E)``, ``P = exp(-E / T) / Z``. All-equal energies
    give the uniform distribution; a non-positive mean energy (every item at the very top)
    falls back to ``T = 1e-12``, i.e. the mass goes to the lowest-energy items.

    >>> probs, t = boltzmann_probabilities(np.array([1.0, 0.5]), epsilon=0.0, c=1.0)
    >>> probs.round(3).tolist(), round(t, 4)  # E = [0, log 2], T = log(2) / 2
    ([0.881, 0.119], 0.3466)
    """
    p = np.asarray(percentiles, dtype=np.float64)
    energy = -np.log(p + epsilon)
    if p.size == 0:
        return np.zeros(0), 0.0
    temperature = max(c * float(energy.mean()), 1e-12)
    logits = -(energy - energy.min()) / temperature
    weights = np.exp(logits)
    return weights / weights.sum(), temperature


@register_fusion("boltzmann", uses_calibration=True, needs_bounded=True)
def boltzmann(
    table: ScoreTable, weights: np.ndarray, *, epsilon: float = 1e-3, c: float = 1.0
) -> np.ndarray:
    """Weighted mix of per-system Boltzmann probabilities (see :func:`boltzmann_probabilities`)."""
    fused = np.zeros(len(table.ids), dtype=np.float64)
    for s in range(table.n_systems):
        rows = np.flatnonzero(table.present[:, s])
        if rows.size:
            probs, _ = boltzmann_probabilities(table.calibrated[rows, s], epsilon=epsilon, c=c)
            fused[rows] += weights[s] * probs
    return fused


@register_fusion("rrf", uses_calibration=False)
def rrf(table: ScoreTable, weights: np.ndarray, *, k: float = 60.0) -> np.ndarray:
    """Reciprocal rank fusion over raw-score ranks (1-based, ties share the average rank)."""
    fused = np.zeros(len(table.ids), dtype=np.float64)
    for s in range(table.n_systems):
        rows = np.flatnonzero(table.present[:, s])
        if rows.size:
            ranks = average_ranks(-table.raw[rows, s])
            fused[rows] += weights[s] / (k + ranks)
    return fused


@register_fusion("dbsf", uses_calibration=False)
def dbsf(table: ScoreTable, weights: np.ndarray) -> np.ndarray:
    """Distribution-based score fusion: per-list mean +/- 3 std scaling, weighted sum."""
    fused = np.zeros(len(table.ids), dtype=np.float64)
    for s in range(table.n_systems):
        rows = np.flatnonzero(table.present[:, s])
        if rows.size:
            values = scale_down(table.raw[rows, s])
            sigma = float(values.std())
            scaled = (
                np.full(rows.size, 0.5)
                if sigma == 0.0
                else (values - (values.mean() - 3 * sigma)) / (6 * sigma)
            )
            fused[rows] += weights[s] * scaled
    return fused
