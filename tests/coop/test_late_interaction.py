"""RaLa's pure scoring functions: hand-built cases, a naive reference, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop.coop.late_interaction import (
    candidate_layers,
    gap_weights,
    layer_gap_maxsim,
    maxsim,
    maxsim_batch,
    pool_idf,
    token_similarities,
)


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.normal(size=shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _reference_maxsim(q: np.ndarray, d: np.ndarray, w: np.ndarray | None = None) -> float:
    best = [max(float(qi @ dj) for dj in d) for qi in q]
    w = np.ones(len(q)) if w is None else w
    return float(np.dot(best, w) / w.sum())


def test_maxsim_known_values() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    d = np.array([[1.0, 0.0], [0.6, 0.8]])
    assert maxsim(q, d) == pytest.approx(0.9)
    assert maxsim(q, d, np.array([1.0, 0.0])) == pytest.approx(1.0)
    assert maxsim(q, d, np.array([0.0, 2.0])) == pytest.approx(0.8)


def test_maxsim_batch_matches_a_naive_loop_over_ragged_passages() -> None:
    rng = np.random.default_rng(0)
    q = _unit(rng, 5, 8)
    passages = [_unit(rng, n, 8) for n in (1, 7, 3, 12)]
    weights = rng.uniform(0.1, 2.0, size=5)
    got = maxsim_batch(q, passages)
    weighted = maxsim_batch(q, passages, weights)
    for i, d in enumerate(passages):
        assert got[i] == pytest.approx(_reference_maxsim(q, d))
        assert weighted[i] == pytest.approx(_reference_maxsim(q, d, weights))


def test_passages_of_different_lengths_never_mix_even_when_every_match_is_negative() -> None:
    q = np.array([[1.0, 0.0]])
    short, long_ = np.array([[-1.0, 0.0]]), np.array([[-1.0, 0.0], [0.0, 1.0]])
    assert maxsim_batch(q, [short, long_]).tolist() == pytest.approx([-1.0, 0.0])
    assert maxsim_batch(q, [long_, short]).tolist() == pytest.approx([0.0, -1.0])
    assert token_similarities(q, [short, long_]).shape == (1, 3)


def test_layer_gap_matches_a_naive_loop() -> None:
    rng = np.random.default_rng(1)
    q = _unit(rng, 3, 4, 6)  # last layer + 2 candidate layers, 4 tokens
    passages = [_unit(rng, 3, n, 6) for n in (2, 5)]
    got = layer_gap_maxsim(q, passages)
    for i, d in enumerate(passages):
        per_token = [
            max(
                max(float(q[0, t] @ d[0, s] - q[c, t] @ d[c, s]) for c in (1, 2))
                for s in range(d.shape[1])
            )
            for t in range(q.shape[1])
        ]
        assert got[i] == pytest.approx(np.mean(per_token))


def test_gap_weight_picks_the_premature_layer_of_largest_gap() -> None:
    q = np.array([1.0, 0.0])
    d = np.array(
        [
            [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]],  # gap 1.0 at position 1
            [[0.6, 0.8], [0.8, 0.6], [-1.0, 0.0]],  # gap 1.6 at position 2
        ]
    )
    weights, premature = gap_weights(q, d)
    assert weights.tolist() == pytest.approx([0.5, 0.8])
    assert premature.tolist() == [1, 2]


def test_pool_idf() -> None:
    weights = pool_idf(np.array([101, 7, 9]), [np.array([101, 7]), np.array([101, 8])])
    assert weights[0] < weights[1] < weights[2]
    assert weights[2] == pytest.approx(np.log(3 / 0.5))
    # a token every passage has still weighs more than 0, so a mean is always defined
    assert pool_idf(np.array([5]), [np.array([5])]).tolist() == pytest.approx([np.log(2 / 1.5)])


def test_candidate_layers_one_per_bucket_and_repeatable() -> None:
    for n_layers, buckets in ((6, 3), (12, 4), (12, 12), (6, 1)):
        layers = candidate_layers(n_layers, buckets=buckets, seed=3)
        assert layers == candidate_layers(n_layers, buckets=buckets, seed=3)
        assert len(layers) == buckets and all(0 <= x < n_layers for x in layers)
        edges = np.linspace(0, n_layers, buckets + 1).round().astype(int)
        for x, lo, hi in zip(layers, edges[:-1], edges[1:], strict=True):
            assert lo <= x < hi
    assert candidate_layers(12, buckets=12) == tuple(range(12))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: maxsim(np.zeros((0, 2)), np.ones((1, 2))), "query tokens must be a non-empty"),
        (lambda: maxsim(np.ones((1, 2)), np.ones((1, 3))), "passage 0 tokens have dimension 3"),
        (lambda: maxsim(np.ones((1, 2)), np.zeros((0, 2))), "passage 0 tokens must be a non-empty"),
        (lambda: maxsim(np.ones((2, 2)), np.ones((1, 2)), np.ones(3)), "query weights have shape"),
        (lambda: maxsim(np.ones((1, 2)), np.ones((1, 2)), np.array([-1.0])), "non-negative"),
        (lambda: maxsim(np.ones((1, 2)), np.ones((1, 2)), np.array([np.nan])), "finite"),
        (lambda: gap_weights(np.ones(2), np.ones((3, 1, 2))), "at least one candidate layer"),
        (lambda: gap_weights(np.ones(3), np.ones((3, 2, 2))), "query_pooled has shape"),
        (lambda: layer_gap_maxsim(np.ones((1, 2, 2)), [np.ones((1, 2, 2))]), "at least one"),
        (lambda: layer_gap_maxsim(np.ones((2, 2, 2)), [np.ones((3, 2, 2))]), "passage 0 layers"),
        (lambda: candidate_layers(6, buckets=7), r"buckets must be in \[1, 6\]"),
        (lambda: candidate_layers(0, buckets=1), "n_layers must be a positive integer"),
    ],
)
def test_bad_input_is_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_empty_candidate_lists_give_empty_scores() -> None:
    assert maxsim_batch(np.ones((1, 2)), []).shape == (0,)
    assert layer_gap_maxsim(np.ones((2, 1, 2)), []).shape == (0,)
