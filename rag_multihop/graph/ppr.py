"""Personalized PageRank by sparse power iteration, as pure functions.

With the row-stochastic transition ``P`` of a weighted adjacency ``A`` (``P = D^-1 A``), a
seed distribution ``s`` and damping ``d`` (the probability of taking another step; HippoRAG's
0.5 is the default), the scores solve

    r = (1 - d) * s + d * (P^T r + (dangling . r) * s)

where ``dangling`` marks nodes without out-edges: a walk that reaches one restarts from the
seeds, so no mass is lost and ``sum(r) = 1``. The iteration stops when the L1 change drops
below ``tol`` or after ``max_iter`` steps (then a warning is logged). Its cost is
``O(iterations * edges)``, and the error shrinks by a factor ``d`` per step.

**Disconnected seeds**: a seed without edges keeps its share of the restart mass (it is
dangling, so its walks restart); seeds in different components spread only within their
own components. An all-zero seed vector is an error.

Example:
    >>> from scipy import sparse
    >>> chain = sparse.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float))
    >>> result = personalized_pagerank(transition_matrix(chain), np.array([1.0, 0, 0]))
    >>> result.scores.round(4).tolist(), result.converged
    ([0.5714, 0.2857, 0.1429], True)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Transition:
    """``P^T`` (column ``i`` holds node ``i``'s out-going step probabilities) and the
    dangling-node mask; build with :func:`transition_matrix`."""

    transposed: sparse.csr_matrix
    dangling: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.transposed.shape[0])


@dataclass(frozen=True)
class PPRResult:
    """Scores of every node (summing to 1), iterations run, final L1 change, convergence."""

    scores: np.ndarray
    iterations: int
    residual: float
    converged: bool


def transition_matrix(adjacency: sparse.spmatrix | np.ndarray) -> Transition:
    """Row-normalise a non-negative square adjacency into a :class:`Transition`.

    Raises ``ValueError`` for a non-square matrix or negative / non-finite weights.
    """
    stochastic, dangling = row_stochastic(adjacency)
    return Transition(sparse.csr_matrix(stochastic.T), dangling)


def row_stochastic(adjacency: sparse.spmatrix | np.ndarray) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``D^-1 A`` (CSR) and the dangling-node mask of a non-negative square adjacency (the
    walk :func:`transition_matrix` transposes; the forward push reads it as it is)."""
    matrix = sparse.csr_matrix(adjacency, dtype=np.float64)
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {matrix.shape}")
    if matrix.nnz and (not np.isfinite(matrix.data).all() or (matrix.data < 0).any()):
        raise ValueError("adjacency weights must be finite and >= 0")
    out_weight = np.asarray(matrix.sum(axis=1)).ravel()
    dangling = out_weight == 0
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=~dangling)
    # D^-1 A: each row's entries scaled by its inverse weight, as the product with the
    # diagonal would (same float products), without a sparse matrix product
    stochastic = sparse.csr_matrix(matrix, copy=True)
    stochastic.sum_duplicates()
    stochastic.data *= np.repeat(inverse, np.diff(stochastic.indptr))
    stochastic.eliminate_zeros()
    return stochastic, dangling


def personalized_pagerank(
    transition: Transition,
    seeds: np.ndarray,
    *,
    damping: float = 0.5,
    tol: float = 1e-8,
    max_iter: int = 100,
) -> PPRResult:
    """Personalized PageRank from ``seeds`` (non-negative, normalised here to sum 1).

    Args:
        transition: from :func:`transition_matrix`.
        seeds: one non-negative weight per node; at least one must be positive.
        damping: probability of another step, in ``[0, 1)``.
        tol: stop when the L1 change of the scores is below this (``> 0``).
        max_iter: iteration cap.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    max_iter = check_positive_int(max_iter, "max_iter")
    seed = np.asarray(seeds, dtype=np.float64)
    if seed.shape != (transition.n_nodes,):
        raise ValueError(
            f"seeds must have one weight per node ({transition.n_nodes}), got shape {seed.shape}"
        )
    if not np.isfinite(seed).all() or (seed < 0).any():
        raise ValueError("seeds must be finite and >= 0")
    total = float(seed.sum())
    if total == 0.0:
        raise ValueError(
            "seeds are all zero: nothing to start the walk from (no query entity in the graph "
            "and no seed passage)"
        )
    seed = seed / total
    restart = (1.0 - damping) * seed
    scores = seed.copy()
    residual = float("inf")
    iteration = 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        dangling_mass = float(scores[transition.dangling].sum())
        updated = restart + damping * (transition.transposed @ scores + dangling_mass * seed)
        residual = float(np.abs(updated - scores).sum())
        scores = updated
        if residual < tol:
            break
    converged = residual < tol
    if not converged:
        logger.warning(
            "personalized PageRank stopped after max_iter=%d with L1 change %.2e > tol=%.1e",
            max_iter,
            residual,
            tol,
        )
    return PPRResult(scores, iteration, residual, converged)
