"""Shared checks for embedding matrices and numeric knobs; messages name the bad value."""

from __future__ import annotations

import numpy as np


def as_embedding_matrix(
    vectors: object, *, name: str = "vectors", dim: int | None = None
) -> np.ndarray:
    """Return ``vectors`` as a C-contiguous float32 ``(n, d)`` array, or raise ``ValueError``.

    Rejects NaN/inf rows (naming the first bad rows) and a dimension other than ``dim``.

    >>> as_embedding_matrix([[1.0, 0.0]], dim=2).shape
    (1, 2)
    """
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, dim) array, got shape {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"{name} have dimension {array.shape[1]}, expected {dim}")
    bad = ~np.isfinite(array).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)[:5].tolist()
        raise ValueError(f"{name} contain NaN or inf values (rows {rows}, {int(bad.sum())} in all)")
    return np.ascontiguousarray(array)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def check_positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_fraction(value: float, name: str) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)
