from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from rag_multihop.fusion.calibration import (
    CALIBRATIONS,
    average_ranks,
    calibrate,
    is_bounded,
    max_scale,
    minmax,
    pit,
    zscore,
)


def reference_pit(scores: np.ndarray) -> np.ndarray:
    """Mid-rank empirical CDF, by counting: (#below + (#equal + 1) / 2) / n."""
    n = scores.size
    return np.array(
        [((scores < s).sum() + ((scores == s).sum() + 1) / 2) / n for s in scores], dtype=float
    )


def test_registry_holds_the_four_calibrations():
    assert sorted(CALIBRATIONS) == ["max", "minmax", "pit", "zscore"]
    assert [is_bounded(n) for n in ("pit", "minmax", "zscore", "max")] == [True, True, False, False]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([3.0, 1.0, 2.0], [1.0, 1 / 3, 2 / 3]),
        ([0.2, 0.9, 0.5, 0.5], [0.25, 1.0, 0.625, 0.625]),  # ties share their average rank
        ([5.0, 5.0, 5.0], [2 / 3, 2 / 3, 2 / 3]),  # constant: (n + 1) / (2n)
        ([7.0], [1.0]),
        ([-1.0, -3.0], [1.0, 0.5]),
    ],
)
def test_pit_hand_cases(scores, expected):
    np.testing.assert_allclose(pit(np.array(scores)), expected)


def test_pit_agrees_with_counting_reference():
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores = rng.integers(0, 6, size=rng.integers(1, 30)).astype(float)  # many ties
        np.testing.assert_allclose(pit(scores), reference_pit(scores))


def test_average_ranks_are_scipys_average_rankdata():
    rng = np.random.default_rng(1)
    for size in (1, 2, 7, 40, 300):
        for values in (
            rng.integers(-3, 4, size=size).astype(float),  # many ties, negatives
            rng.standard_normal(size),
            np.zeros(size),
            np.array([0.0, -0.0] * size)[:size],  # -0.0 ties with 0.0
        ):
            np.testing.assert_array_equal(average_ranks(values), rankdata(values, method="average"))


def test_pit_is_invariant_to_monotone_transforms():
    scores = np.array([0.1, 0.7, 0.3, 0.9])
    np.testing.assert_allclose(pit(scores), pit(np.exp(10 * scores) - 4))


@pytest.mark.parametrize(
    ("function", "scores", "expected"),
    [
        (minmax, [1.0, 3.0, 2.0], [0.0, 1.0, 0.5]),
        (minmax, [4.0, 4.0], [1.0, 1.0]),  # constant list: 1.0
        (zscore, [1.0, 3.0], [-1.0, 1.0]),
        (zscore, [2.0, 2.0, 2.0], [0.0, 0.0, 0.0]),  # constant list: 0.0
        (max_scale, [2.0, 1.0, -4.0], [0.5, 0.25, -1.0]),
        (max_scale, [0.0, 0.0], [0.0, 0.0]),  # all zero stays zero
    ],
)
def test_other_calibrations_hand_cases(function, scores, expected):
    np.testing.assert_allclose(function(np.array(scores)), expected)


def test_pinned_values():
    scores = np.array([0.83, 0.41, 0.41, 0.77, 0.12])
    np.testing.assert_allclose(calibrate("pit", scores), [1.0, 0.5, 0.5, 0.8, 0.2])
    np.testing.assert_allclose(
        calibrate("minmax", scores), [1.0, 0.4084507, 0.4084507, 0.915493, 0.0], rtol=1e-6
    )
    np.testing.assert_allclose(
        calibrate("zscore", scores),
        [1.2310538, -0.3746685, -0.3746685, 1.0016649, -1.4833816],  # mean 0.508, std 0.26157
        rtol=1e-6,
    )


def test_calibration_leaves_input_unchanged_and_handles_empty():
    scores = np.array([0.3, 0.1, 0.2])
    before = scores.copy()
    for name in CALIBRATIONS:
        calibrate(name, scores)
    np.testing.assert_array_equal(scores, before)
    assert calibrate("pit", np.array([])).size == 0


def test_unknown_calibration_lists_registered_names():
    with pytest.raises(ValueError, match=r"unknown calibration 'rank'; choose from: max, minmax"):
        calibrate("rank", np.array([1.0]))
