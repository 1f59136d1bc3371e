from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy import sparse

from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix


def closed_form(adjacency: np.ndarray, seeds: np.ndarray, damping: float) -> np.ndarray:
    """Dense linear solve of r = (1-d) s + d (P^T r + (dangling . r) s), written independently."""
    n = adjacency.shape[0]
    s = seeds / seeds.sum()
    out = adjacency.sum(axis=1)
    step = np.zeros((n, n))
    for i in range(n):
        step[:, i] = adjacency[i] / out[i] if out[i] > 0 else s  # dangling rows restart at s
    return np.linalg.solve(np.eye(n) - damping * step, (1 - damping) * s)


def test_chain_hand_case():
    # 0 -> 1 -> 2, node 2 dangling; seed 0; d = 0.5: r0 = 4/7, r1 = 2/7, r2 = 1/7
    chain = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)
    result = personalized_pagerank(transition_matrix(chain), np.array([1.0, 0, 0]), tol=1e-12)
    np.testing.assert_allclose(result.scores, [4 / 7, 2 / 7, 1 / 7], atol=1e-10)
    assert result.converged and result.scores.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("damping", [0.0, 0.5, 0.85])
def test_agrees_with_dense_linear_solve_on_random_graphs(damping):
    rng = np.random.default_rng(7)
    for _ in range(5):
        n = 30
        adjacency = rng.random((n, n)) * (rng.random((n, n)) < 0.1)
        adjacency[rng.choice(n, 4, replace=False)] = 0.0  # some dangling nodes
        seeds = rng.random(n) * (rng.random(n) < 0.2)
        seeds[0] += 0.5
        result = personalized_pagerank(
            transition_matrix(sparse.csr_matrix(adjacency)), seeds, damping=damping, tol=1e-13
        )
        np.testing.assert_allclose(
            result.scores, closed_form(adjacency, seeds, damping), atol=1e-10
        )


def test_pinned_scores_on_a_small_weighted_graph():
    adjacency = np.array([[0, 2, 1, 0], [1, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]], dtype=float)
    result = personalized_pagerank(transition_matrix(adjacency), np.array([1.0, 0, 0, 1.0]))
    np.testing.assert_allclose(result.scores, np.array([12, 4, 2, 13]) / 31, atol=1e-8)


def test_disconnected_seed_keeps_its_restart_mass():
    # node 2 has no edges at all: its walks restart at the seeds, so it keeps its share
    adjacency = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float)
    result = personalized_pagerank(transition_matrix(adjacency), np.array([1.0, 0, 1.0]))
    assert result.scores.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(result.scores, closed_form(adjacency, np.array([1.0, 0, 1]), 0.5))
    assert result.scores[2] > result.scores[1] > 0


def test_iteration_cap_is_reported_and_logged(caplog):
    chain = np.array([[0, 1], [1, 0]], dtype=float)
    with caplog.at_level(logging.WARNING):
        result = personalized_pagerank(
            transition_matrix(chain), np.array([1.0, 0]), damping=0.9, tol=1e-15, max_iter=3
        )
    assert not result.converged and result.iterations == 3
    assert "max_iter=3" in caplog.text


def test_inputs_are_left_unchanged():
    adjacency = sparse.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    seeds = np.array([3.0, 1.0])
    transition = transition_matrix(adjacency)
    personalized_pagerank(transition, seeds)
    assert seeds.tolist() == [3.0, 1.0]
    assert adjacency.toarray().tolist() == [[0, 1], [1, 0]]


@pytest.mark.parametrize(
    ("seeds", "kwargs", "message"),
    [
        ([0.0, 0.0], {}, "seeds are all zero"),
        ([1.0, -1.0], {}, "seeds must be finite and >= 0"),
        ([1.0], {}, r"one weight per node \(2\)"),
        ([1.0, 0.0], {"damping": 1.0}, r"damping must be in \[0, 1\), got 1.0"),
        ([1.0, 0.0], {"tol": 0}, "tol must be > 0"),
        ([1.0, 0.0], {"max_iter": 0}, "max_iter must be a positive integer, got 0"),
    ],
)
def test_bad_input_is_a_clear_error(seeds, kwargs, message):
    transition = transition_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    with pytest.raises(ValueError, match=message):
        personalized_pagerank(transition, np.array(seeds), **kwargs)


def test_bad_adjacency_is_a_clear_error():
    with pytest.raises(ValueError, match="must be square"):
        transition_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="finite and >= 0"):
        transition_matrix(np.array([[0, -1], [1, 0]], dtype=float))
