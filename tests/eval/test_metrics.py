"""Retrieval and QA metrics: hand-computed values, official-eval edge cases, bootstrap behaviour."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from rag_multihop.eval.metrics import (
    BootstrapResult,
    WinLoss,
    all_recall_at_k,
    exact_match,
    f1_score,
    last_hop_recall_at_k,
    normalize_answer,
    paired_bootstrap,
    recall_at_k,
    recall_curve,
    wins_losses,
)

RANKING = ["a", "b", "c", "d", "e"]
Metric = Callable[[Sequence[str], Sequence[str], int], float]


# --- retrieval ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "k", "expected"),
    [
        (["b", "d"], 1, 0.0),
        (["b", "d"], 2, 0.5),
        (["b", "d"], 4, 1.0),
        (["b", "d"], 50, 1.0),  # k beyond the ranking length
        (["b", "z"], 5, 0.5),  # a gold passage never retrieved
        (["a", "c", "e", "z"], 3, 0.5),
        (["b", "b", "d"], 2, 0.5),  # repeated gold counts once
    ],
)
def test_recall_at_k_hand_values(gold: list[str], k: int, expected: float) -> None:
    assert recall_at_k(RANKING, gold, k) == expected


def test_all_recall_and_last_hop_recall() -> None:
    assert all_recall_at_k(RANKING, ["b", "d"], 3) == 0.0
    assert all_recall_at_k(RANKING, ["b", "d"], 4) == 1.0
    assert all_recall_at_k(["a", "a", "b"], ["a", "b"], 2) == 0.0
    assert last_hop_recall_at_k(RANKING, ["e", "a"], 1) == 1.0  # last hop "a" is ranked first
    assert last_hop_recall_at_k(RANKING, ["a", "e"], 4) == 0.0
    assert last_hop_recall_at_k(RANKING, ["a", "e"], 5) == 1.0


@pytest.mark.parametrize("metric", [recall_at_k, all_recall_at_k, last_hop_recall_at_k])
def test_retrieval_metrics_validate_k_and_gold(metric: Metric) -> None:
    for bad_k in (0, -3):
        with pytest.raises(ValueError, match=f"k must be a positive integer, got {bad_k}"):
            metric(RANKING, ["a"], bad_k)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        metric(RANKING, ["a"], 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        metric(RANKING, [], 5)


def test_recall_curve_averages_over_questions() -> None:
    rankings = [["a", "b", "c"], ["x", "c", "y"], ["q", "r", "s"]]
    golds = [["a", "c"], ["c"], ["s", "t"]]
    curve = recall_curve(rankings, golds, ks=[1, 2, 3])
    assert curve == pytest.approx({1: 0.5 / 3, 2: 1.5 / 3, 3: 2.5 / 3})
    with pytest.raises(ValueError, match="one ranking per question"):
        recall_curve(rankings, golds[:2], ks=[1])
    with pytest.raises(ValueError, match="no questions"):
        recall_curve([], [], ks=[1])


# --- answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Beatles", "beatles"),
        ("  An   apple, a day!  ", "apple day"),
        ("theatre", "theatre"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("Rock 'n' Roll", "rock n roll"),
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match_takes_the_best_gold_answer() -> None:
    assert exact_match("the Detroit", ["Motor City", "Detroit"]) == 1.0
    assert exact_match("Detroit, Michigan", ["Detroit"]) == 0.0
    assert exact_match("Paris.", "paris") == 1.0  # a single string is one answer, not characters
    with pytest.raises(ValueError, match="answers is empty"):
        exact_match("x", [])


def test_f1_hand_values() -> None:
    # pred {cat, sat}, gold {cat, sat, on, mat}: precision 1, recall 1/2 -> F1 2/3
    assert f1_score("The cat sat", ["cat sat on the mat"]) == pytest.approx(2 / 3)
    # pred {new, york, city} vs gold {new, york}: precision 2/3, recall 1 -> F1 0.8
    assert f1_score("New York City", ["New York"]) == pytest.approx(0.8)
    assert f1_score("Boston", ["New York", "Boston"]) == 1.0
    assert f1_score("a a b", ["a b b"]) == pytest.approx(2 / 3)  # articles drop: {b} vs {b, b}
    assert f1_score("x b", ["b b"]) == pytest.approx(0.5)  # counts clipped: one common "b"
    assert f1_score("", ["anything"]) == 0.0


def test_f1_yes_no_noanswer_need_an_exact_match() -> None:
    assert f1_score("yes", ["yes"]) == 1.0
    assert f1_score("Yes.", ["yes"]) == 1.0
    assert f1_score("yes", ["no"]) == 0.0
    assert f1_score("yes it is", ["yes"]) == 0.0  # gold "yes" needs exactly "yes"
    assert f1_score("no", ["no way out"]) == 0.0  # prediction "no" scores only against "no"
    assert f1_score("noanswer", ["no answer"]) == 0.0
    assert f1_score("yes", ["no", "yes"]) == 1.0


# --- paired comparisons -------------------------------------------------------------------------


def test_bootstrap_interval_contains_the_true_difference() -> None:
    rng = np.random.default_rng(123)
    b = rng.random(1000)
    a = b + 0.1 + rng.normal(0.0, 0.2, size=1000)
    result = paired_bootstrap(a, b, seed=7)
    assert isinstance(result, BootstrapResult)
    assert result.n == 1000 and result.n_resamples == 10000 and result.confidence == 0.95
    assert result.mean_diff == pytest.approx(float(np.mean(a - b)))
    assert result.low < 0.1 < result.high
    assert result.low > 0.0 and result.p_value < 0.001
    # The percentile interval agrees with the normal approximation on a large sample.
    half = 1.96 * float(np.std(a - b, ddof=1)) / math.sqrt(1000)
    assert result.low == pytest.approx(result.mean_diff - half, abs=0.15 * half)
    assert result.high == pytest.approx(result.mean_diff + half, abs=0.15 * half)


def test_bootstrap_is_deterministic_by_seed() -> None:
    a = [1, 0, 1, 1, 0, 1, 0, 1]
    b = [0, 0, 1, 0, 1, 1, 0, 0]
    first = paired_bootstrap(a, b, n_resamples=3000, seed=1)
    assert paired_bootstrap(a, b, n_resamples=3000, seed=1) == first
    assert paired_bootstrap(a, b, n_resamples=3000, seed=2) != first
    assert first.mean_diff == 0.25
    assert 0.0 < first.p_value <= 1.0  # 8 questions: not significant


def test_bootstrap_of_identical_systems() -> None:
    values = [0.5, 1.0, 0.0, 1.0]
    result = paired_bootstrap(values, values, n_resamples=500)
    assert (result.mean_diff, result.low, result.high, result.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_bootstrap_p_value_is_symmetric_in_the_sign() -> None:
    a = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
    b = [0, 1, 0, 0, 1, 1, 0, 0, 1, 0]
    forward = paired_bootstrap(a, b, n_resamples=4000)
    backward = paired_bootstrap(b, a, n_resamples=4000)
    assert backward.mean_diff == -forward.mean_diff
    assert backward.low == pytest.approx(-forward.high)
    assert backward.p_value == pytest.approx(forward.p_value)


def test_bootstrap_validation() -> None:
    with pytest.raises(ValueError, match="same questions: got 3 and 2"):
        paired_bootstrap([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match=r"a has NaN or inf values at positions \[1\]"):
        paired_bootstrap([1.0, math.nan], [1.0, 0.0])
    with pytest.raises(ValueError, match="b has NaN or inf"):
        paired_bootstrap([1.0, 0.0], [math.inf, 0.0])
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 95"):
        paired_bootstrap([1.0], [0.0], confidence=95)
    with pytest.raises(ValueError, match="n_resamples must be a positive integer"):
        paired_bootstrap([1.0], [0.0], n_resamples=0)


def test_wins_losses() -> None:
    assert wins_losses([1.0, 0.5, 0.0, 1.0], [0.0, 0.5, 1.0, 0.5]) == WinLoss(
        wins=2, losses=1, ties=1
    )
    with pytest.raises(ValueError, match="same questions"):
        wins_losses([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="NaN"):
        wins_losses([math.nan], [1.0])
