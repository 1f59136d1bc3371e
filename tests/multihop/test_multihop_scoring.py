"""The scoring functions: known answers and agreement with an explicit projection."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop.multihop.scoring import (
    best_pair,
    context_overlap,
    link_scores,
    pair_matrix,
    residual_cosine,
)


def test_residual_cosine_equals_the_cosine_with_the_projected_query() -> None:
    rng = np.random.default_rng(0)
    q, a = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 16)))
    candidates = rng.normal(size=(5, 16))
    candidates /= np.linalg.norm(candidates, axis=1, keepdims=True)
    residual = q - (q @ a) * a
    expected = candidates @ residual / np.linalg.norm(residual)
    got = residual_cosine(candidates @ q, float(q @ a), candidates @ a)
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_a_namesake_of_the_first_hop_loses_what_it_shared_with_it() -> None:
    # c1 lies along a (a namesake), c2 along the rest of the question: same plain cosine
    q = np.array([0.6, 0.8, 0.0])
    a, c1, c2 = np.eye(3)[0], np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    plain = np.array([c1 @ q, c2 @ q])
    got = residual_cosine(plain, float(q @ a), np.array([c1 @ a, c2 @ a]))
    assert got[0] == pytest.approx(0.0) and got[1] == pytest.approx(1.0)


def test_a_first_hop_equal_to_the_query_does_not_divide_by_zero() -> None:
    got = residual_cosine(np.array([1.0, 0.2]), 1.0, np.array([1.0, 0.2]))
    assert np.isfinite(got).all()


def test_link_scores_are_zero_without_a_link() -> None:
    got = link_scores(np.array([0.5, 0.0]), np.array([1.0, 1.0]), np.array([1.0, 1.0]), 0.2)
    assert got.tolist() == [pytest.approx(0.7), 0.0]


def test_context_overlap_is_a_share_of_the_question() -> None:
    assert context_overlap(frozenset(), frozenset({"x"})) == 0.0
    assert context_overlap(frozenset({"a", "b", "c", "d"}), frozenset({"a"})) == 0.25


def test_one_mention_never_names_both_passages_of_a_pair() -> None:
    # two referents of one mention (same=True) only count the first hop's name
    scores = pair_matrix(
        np.array([1.5]),
        np.array([1.0, 1.0]),
        np.array([[0.2, 0.1]]),
        np.zeros((1, 2)),
        np.array([[True, False]]),
    )
    assert scores.tolist() == [[pytest.approx(1.7), pytest.approx(2.6)]]


def test_best_pair_never_pairs_a_passage_with_itself() -> None:
    scores = np.array([[5.0, 1.0], [0.5, 4.0]])
    assert best_pair(scores, [0, 1]) == (0, 1, 1.0)
