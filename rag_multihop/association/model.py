"""The association function f and the scoring modes, as pure numpy functions.

``f(x) = normalize(α·x + (1−α)·g(x))`` with ``α = sigmoid(w)`` a learned scalar and ``g`` four
``Linear(d, d)`` layers with LayerNorm + GELU (exact, erf-based) after each of the first three.
Inference needs numpy and scipy only; :mod:`rag_multihop.association.training` fits the same
function with torch and returns its weights as :class:`AssociationWeights`.

A scoring mode turns a query vector ``q``, candidate vectors ``P`` and their transforms
``f(P)`` into association scores ``a``; the reranking score is
``(1 − λ)·cos(q, p) + λ·a(q, p)`` (:func:`blend`). Modes are registered in
:data:`SCORING_MODES`:

- ``mixed``: ``a = ½[f(q)·p + f(p)·q]`` (the paper's default);
- ``reverse``: ``a = f(p)·q`` (reported stronger by the paper; needs no ``f(q)``).

Example:
    >>> w = AssociationWeights.identity(2)            # g(x) = 0, so f(x) = x
    >>> P = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    >>> q = np.array([0.6, 0.8], dtype=np.float32)
    >>> a = association_scores(q, P, association_transform(P, w), w, mode="mixed")
    >>> [round(float(v), 3) for v in a], [round(float(v), 3) for v in blend(P @ q, a, 0.5)]
    ([0.6, 0.8], [0.6, 0.8])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from rag_multihop.validation import check_fraction

N_LINEAR = 4
"""Linear layers in g; LayerNorm + GELU follow each of the first ``N_LINEAR - 1``."""

LAYER_NORM_EPS = 1e-5
"""LayerNorm epsilon (torch's default, so numpy and torch forward passes agree)."""

DEFAULT_LAMBDA = 0.5
DEFAULT_MODE = "mixed"

# torch.nn.Sequential indices of the Linear and LayerNorm layers (GELUs have no parameters).
_LINEAR_INDICES = tuple(3 * i for i in range(N_LINEAR))
_NORM_INDICES = tuple(3 * i + 1 for i in range(N_LINEAR - 1))
RESIDUAL_KEY = "residual_weight"


@dataclass(frozen=True)
class AssociationWeights:
    """The parameters of f: ``(out, in)`` Linear matrices as torch stores them, in order.

    ``residual_weight`` is ``w`` with ``α = sigmoid(w)``. :meth:`to_state_dict` and
    :meth:`from_state_dict` use torch's parameter names (``net.0.weight``, ...,
    ``residual_weight``), so a saved model is also a valid ``state_dict`` of the training module.
    """

    linear_weights: tuple[np.ndarray, ...]
    linear_biases: tuple[np.ndarray, ...]
    norm_weights: tuple[np.ndarray, ...]
    norm_biases: tuple[np.ndarray, ...]
    residual_weight: float

    @property
    def dim(self) -> int:
        return int(self.linear_weights[0].shape[1])

    @property
    def alpha(self) -> float:
        """``α = sigmoid(w)``, the share of the input kept by the residual blend."""
        return float(1.0 / (1.0 + np.exp(-self.residual_weight)))

    @classmethod
    def identity(cls, dim: int) -> AssociationWeights:
        """Weights whose g is zero everywhere, so ``f(x) = x / |x|`` (for tests and examples)."""
        state = {key: np.zeros(shape, dtype=np.float32) for key, shape in _shapes(dim).items()}
        for index in _NORM_INDICES:
            state[f"net.{index}.weight"] = np.ones(dim, dtype=np.float32)
        return cls.from_state_dict(state)

    def to_state_dict(self) -> dict[str, np.ndarray]:
        """Arrays by torch parameter name (float32; ``residual_weight`` is 0-d)."""
        state: dict[str, np.ndarray] = {}
        for index, weight, bias in zip(
            _LINEAR_INDICES, self.linear_weights, self.linear_biases, strict=True
        ):
            state[f"net.{index}.weight"], state[f"net.{index}.bias"] = weight, bias
        for index, weight, bias in zip(
            _NORM_INDICES, self.norm_weights, self.norm_biases, strict=True
        ):
            state[f"net.{index}.weight"], state[f"net.{index}.bias"] = weight, bias
        state[RESIDUAL_KEY] = np.asarray(self.residual_weight, dtype=np.float32)
        return {k: np.array(v, dtype=np.float32, order="C") for k, v in state.items()}

    @classmethod
    def from_state_dict(cls, state: Mapping[str, np.ndarray]) -> AssociationWeights:
        """Weights from torch-named arrays; ``ValueError`` names a missing, extra or bad entry."""
        first = np.asarray(state.get("net.0.weight", np.zeros((0, 0))))
        if first.ndim != 2 or first.shape[0] != first.shape[1] or first.shape[0] == 0:
            raise ValueError(
                f"net.0.weight must be a square (d, d) matrix, got shape {first.shape}"
            )
        dim = first.shape[0]
        expected = _shapes(dim)
        missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
        if missing or extra:
            raise ValueError(
                f"association weights do not match the model layout: missing {missing[:5]}, "
                f"unexpected {extra[:5]}"
            )
        arrays = {key: np.asarray(value, dtype=np.float32) for key, value in state.items()}
        for key, shape in expected.items():
            if arrays[key].shape != shape:
                raise ValueError(f"{key} has shape {arrays[key].shape}, expected {shape}")
            if not np.isfinite(arrays[key]).all():
                raise ValueError(f"{key} contains NaN or inf values")

        def pick(indices: tuple[int, ...], name: str) -> tuple[np.ndarray, ...]:
            return tuple(arrays[f"net.{i}.{name}"] for i in indices)

        return cls(
            pick(_LINEAR_INDICES, "weight"),
            pick(_LINEAR_INDICES, "bias"),
            pick(_NORM_INDICES, "weight"),
            pick(_NORM_INDICES, "bias"),
            float(arrays[RESIDUAL_KEY]),
        )


def _shapes(dim: int) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape for input dimension ``dim``."""
    shapes: dict[str, tuple[int, ...]] = {RESIDUAL_KEY: ()}
    for index in _LINEAR_INDICES:
        shapes[f"net.{index}.weight"], shapes[f"net.{index}.bias"] = (dim, dim), (dim,)
    for index in _NORM_INDICES:
        shapes[f"net.{index}.weight"], shapes[f"net.{index}.bias"] = (dim,), (dim,)
    return shapes


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``x·Φ(x)`` (torch's ``nn.GELU()`` default)."""
    from scipy.special import erf  # deferred: scipy.special costs ~0.2 s to import

    return (0.5 * x * (1.0 + erf(x / np.sqrt(2.0, dtype=x.dtype)))).astype(x.dtype, copy=False)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """LayerNorm over the last axis (biased variance, eps :data:`LAYER_NORM_EPS`)."""
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias


def association_transform(vectors: np.ndarray, weights: AssociationWeights) -> np.ndarray:
    """``f`` applied to each row of ``vectors`` ``(n, d)``: unit-length float32 rows.

    A pure batch function: map it over shards to precompute ``f(P)`` for a large corpus.
    """
    x = np.asarray(vectors, dtype=np.float32)
    h = x
    for i in range(N_LINEAR):
        h = h @ weights.linear_weights[i].T + weights.linear_biases[i]
        if i < N_LINEAR - 1:
            h = gelu(layer_norm(h, weights.norm_weights[i], weights.norm_biases[i]))
    alpha = np.float32(weights.alpha)
    out = alpha * x + (np.float32(1.0) - alpha) * h
    norms = np.linalg.norm(out, axis=-1, keepdims=True)
    return (out / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


ScoringFunction = Callable[[np.ndarray, "np.ndarray | None", np.ndarray, np.ndarray], np.ndarray]
"""``(q, f(q) or None, P, f(P)) -> a``: association scores of the ``K`` candidates."""


@dataclass(frozen=True)
class ScoringMode:
    """A registered association scoring; ``uses_query_transform`` says whether it needs f(q)."""

    name: str
    description: str
    uses_query_transform: bool
    function: ScoringFunction


def mixed_association(
    query: np.ndarray, query_f: np.ndarray | None, passages: np.ndarray, passages_f: np.ndarray
) -> np.ndarray:
    """``½[f(q)·p + f(p)·q]`` for each candidate row ``p``."""
    if query_f is None:
        raise ValueError("mixed scoring needs f(q); pass the transformed query")
    return np.float32(0.5) * (passages @ query_f + passages_f @ query)


def reverse_association(
    query: np.ndarray, query_f: np.ndarray | None, passages: np.ndarray, passages_f: np.ndarray
) -> np.ndarray:
    """``f(p)·q`` for each candidate row ``p`` (f(q) is not used)."""
    return passages_f @ query


SCORING_MODES: Mapping[str, ScoringMode] = MappingProxyType(
    {
        "mixed": ScoringMode(
            "mixed", "a = ½[f(q)·p + f(p)·q] (the paper's default)", True, mixed_association
        ),
        "reverse": ScoringMode(
            "reverse", "a = f(p)·q (the paper's stronger variant)", False, reverse_association
        ),
    }
)
"""Scoring mode name -> :class:`ScoringMode`; error messages are built from it."""


def get_scoring_mode(name: str) -> ScoringMode:
    """The registered mode ``name``; ``ValueError`` lists the registered names."""
    if name not in SCORING_MODES:
        raise ValueError(f"mode must be one of {sorted(SCORING_MODES)}, got {name!r}")
    return SCORING_MODES[name]


def association_scores(
    query: np.ndarray,
    passages: np.ndarray,
    passages_f: np.ndarray,
    weights: AssociationWeights,
    *,
    mode: str = DEFAULT_MODE,
) -> np.ndarray:
    """Association scores ``(K,)`` of candidates ``passages`` ``(K, d)`` for ``query`` ``(d,)``.

    ``passages_f`` is ``f(passages)``, usually precomputed; f(q) is computed only when the mode
    uses it.
    """
    scoring = get_scoring_mode(mode)
    query_f = (
        association_transform(query[None, :], weights)[0] if scoring.uses_query_transform else None
    )
    return scoring.function(query, query_f, passages, passages_f)


def blend(cosine: np.ndarray, association: np.ndarray, lambda_: float) -> np.ndarray:
    """``(1 − λ)·cosine + λ·association``; ``λ`` must be in [0, 1]."""
    lam = np.float32(check_fraction(lambda_, "lambda_"))
    return (np.float32(1.0) - lam) * cosine + lam * association
