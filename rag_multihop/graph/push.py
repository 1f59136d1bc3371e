"""Personalized PageRank by local forward push: work that follows the answer, not the corpus.

Power iteration (:mod:`rag_multihop.graph.ppr`) touches every edge on every step, so its
cost grows with the graph. Forward push (Andersen, Chung and Lang, 2006) keeps an estimate
``p`` and a residual ``r`` (initially the seed distribution) and repeatedly *pushes* a node
``u`` whose residual is large relative to its out-degree: ``(1 - d) * r[u]`` settles into
``p[u]`` and ``d * r[u]`` spreads over ``u``'s out-edges (a dangling node sends it back to
the seeds, as the power iteration does). Only nodes the walk reaches are ever touched.

The invariant ``ppr = p + sum_u r[u] * ppr(e_u)`` holds after every push, and every
``ppr(e_u)`` sums to one, so the **L1 error of the returned scores is exactly the residual
mass left** (returned as ``residual``), and no score is over-estimated. Pushing stops when
every node has ``r[u] < epsilon * max(outdeg(u), 1)``; the total work is
``O(1 / (epsilon * (1 - d)))`` edge visits whatever the size of the graph. Here the push is
done a frontier at a time with numpy (all nodes over the threshold at once), which keeps
the same invariant and bound.

Example:
    >>> from scipy import sparse
    >>> from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix
    >>> chain = sparse.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float))
    >>> graph = PushGraph.from_transition(transition_matrix(chain))
    >>> result = push_pagerank(graph, [0], epsilon=1e-9)
    >>> result.scores.round(4).tolist(), result.residual < 1e-8
    ([0.5714, 0.2857, 0.1429], True)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from rag_multihop.graph.ppr import Transition, row_stochastic
from rag_multihop.validation import check_positive_int

DEFAULT_EPSILON = 1e-5
"""Push threshold per unit of out-degree (see the module docstring for the bound)."""


@dataclass(frozen=True, eq=False)
class PushGraph:
    """The row-stochastic walk ``P`` in CSR form (row ``u`` = ``u``'s out-steps),
    ``max(out-degree, 1)`` per node and the dangling mask; build once per graph with
    :meth:`from_transition`. Memory: one more copy of the transition's edges."""

    forward: sparse.csr_matrix
    degree_floor: np.ndarray
    dangling: np.ndarray

    @classmethod
    def from_transition(cls, transition: Transition) -> PushGraph:
        return cls._of(sparse.csr_matrix(transition.transposed.T), transition.dangling)

    @classmethod
    def from_adjacency(cls, adjacency: sparse.spmatrix | np.ndarray) -> PushGraph:
        """The same walk as ``from_transition(transition_matrix(adjacency))``, without making
        the transposed transition (one copy of the edges less at its peak)."""
        return cls._of(*row_stochastic(adjacency))

    @classmethod
    def _of(cls, forward: sparse.csr_matrix, dangling: np.ndarray) -> PushGraph:
        forward.sort_indices()
        degree_floor = np.maximum(np.diff(forward.indptr), 1).astype(np.float64)
        return cls(forward, degree_floor, dangling)

    @property
    def n_nodes(self) -> int:
        return int(self.forward.shape[0])


@dataclass(frozen=True)
class PushResult:
    """The nodes with a positive score (``support``, sorted) and their scores (``values``,
    never above the exact PPR), the L1 distance to the exact PPR (the residual mass left),
    the frontier rounds run, the edges visited, the node pushes made (frontier sizes
    summed) and the graph's node count. :attr:`scores` is the dense vector, made when asked
    (the walk itself never touches all nodes)."""

    support: np.ndarray
    values: np.ndarray
    residual: float
    rounds: int
    edges_visited: int
    pushes: int
    n_nodes: int

    @property
    def scores(self) -> np.ndarray:
        """One score per graph node (zero off the support)."""
        dense = np.zeros(self.n_nodes)
        dense[self.support] = self.values
        return dense


_WORKSPACE = threading.local()
"""Per thread, two float64 vectors as long as the largest graph pushed on: the estimate and
the residual, all zero between calls (each push zeroes what it touched), so a push costs
what it visits, not an ``O(nodes)`` allocation."""


def _workspace(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    arrays = getattr(_WORKSPACE, "arrays", None)
    if arrays is None or len(arrays[0]) < n_nodes:
        arrays = (np.zeros(n_nodes), np.zeros(n_nodes))
        _WORKSPACE.arrays = arrays
    return arrays[0][:n_nodes], arrays[1][:n_nodes]


def push_pagerank(
    graph: PushGraph,
    seed_nodes: Sequence[int] | np.ndarray,
    seed_weights: Sequence[float] | np.ndarray | None = None,
    *,
    damping: float = 0.5,
    epsilon: float = DEFAULT_EPSILON,
    max_rounds: int = 10_000,
) -> PushResult:
    """Approximate Personalized PageRank from ``seeds`` by forward push.

    Args:
        graph: from :meth:`PushGraph.from_transition`.
        seed_nodes: the nodes the walk restarts from (sparse: nothing here is ``O(nodes)``).
        seed_weights: one non-negative weight per seed node, not all zero (normalised
            here); ``None`` weighs them equally.
        damping: probability of another step, in ``[0, 1)``.
        epsilon: push threshold per unit of out-degree, ``> 0``; smaller is more exact.
        max_rounds: cap on frontier rounds (the bound above makes it rarely matter).
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    max_rounds = check_positive_int(max_rounds, "max_rounds")
    nodes = np.asarray(seed_nodes, dtype=np.int64).reshape(-1)
    if nodes.size and (nodes.min() < 0 or nodes.max() >= graph.n_nodes):
        raise ValueError(f"seed_nodes must be node indices in [0, {graph.n_nodes})")
    given = np.ones(nodes.size) if seed_weights is None else seed_weights
    weights = np.asarray(given, dtype=np.float64).reshape(-1)
    if weights.shape != nodes.shape:
        raise ValueError(
            f"seed_weights must have one weight per seed node ({nodes.size}), got {weights.size}"
        )
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("seed_weights must be finite and >= 0")
    keep = weights > 0
    if not keep.any():
        raise ValueError(
            "no positive seed: nothing to start the walk from (no query entity in the graph "
            "and no seed passage)"
        )
    starts_at, inverse = np.unique(nodes[keep], return_inverse=True)
    restart = np.bincount(inverse, weights=weights[keep]).astype(np.float64)
    restart = restart / restart.sum()

    scores, residual = _workspace(graph.n_nodes)
    touched_all = [starts_at]
    try:
        return _push(
            graph, scores, residual, starts_at, restart, touched_all, damping, epsilon, max_rounds
        )
    finally:
        for nodes_seen in touched_all:  # leave the workspace all zero for the next push
            scores[nodes_seen] = 0.0
            residual[nodes_seen] = 0.0


def _push(
    graph: PushGraph,
    scores: np.ndarray,
    residual: np.ndarray,
    starts_at: np.ndarray,
    restart: np.ndarray,
    touched_all: list[np.ndarray],
    damping: float,
    epsilon: float,
    max_rounds: int,
) -> PushResult:
    """The frontier loop over zeroed ``scores`` and ``residual``; every node whose entries
    it sets is appended to ``touched_all``."""
    residual[starts_at] = restart
    frontier = starts_at
    pushed = [starts_at]
    settled = 0.0
    rounds = visited = pushes = 0
    indptr, indices, data = graph.forward.indptr, graph.forward.indices, graph.forward.data
    while frontier.size and rounds < max_rounds:
        rounds += 1
        pushes += int(frontier.size)
        mass = residual[frontier]
        residual[frontier] = 0.0
        scores[frontier] += (1.0 - damping) * mass
        settled += (1.0 - damping) * float(mass.sum())
        reached = np.empty(0, dtype=np.int64)
        returning = float(mass[graph.dangling[frontier]].sum())
        if returning:
            residual[starts_at] += damping * returning * restart
        starts, ends = indptr[frontier], indptr[frontier + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total:
            visited += total
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            slots = offsets + np.arange(total)
            targets = indices[slots]
            amounts = data[slots] * np.repeat(damping * mass, lengths)
            reached, inverse = np.unique(targets, return_inverse=True)
            residual[reached] += np.bincount(inverse, weights=amounts)
            touched_all.append(reached)
        # the nodes whose residual grew (sorted, unique: the union only when mass returned)
        candidates = np.union1d(reached, starts_at) if returning else reached
        frontier = candidates[residual[candidates] >= epsilon * graph.degree_floor[candidates]]
        pushed.append(frontier)
    support = np.unique(np.concatenate(pushed))
    return PushResult(
        support,
        scores[support],
        max(0.0, 1.0 - settled),
        rounds,
        visited,
        pushes,
        graph.n_nodes,
    )
