from __future__ import annotations

import math

import numpy as np
import pytest

from rag_multihop.fusion import FUSIONS, fuse_lists
from rag_multihop.fusion.functions import boltzmann_probabilities

DENSE = (["a", "b", "c", "d"], [0.9, 0.8, 0.5, 0.1])
GRAPH = (["c", "e", "a"], [0.30, 0.20, 0.05])


def scores_by_id(result) -> dict[str, float]:
    return {doc: round(float(s), 6) for doc, s in zip(result.ids, result.scores, strict=True)}


# --- hand-built cases with known answers -----------------------------------------------------


def test_linear_pit_hand_case():
    # dense PIT: a 1, b .75, c .5, d .25; graph PIT: c 1, e 2/3, a 1/3; missing counts 0
    result = fuse_lists([DENSE, GRAPH], calibration="pit", fusion="linear")
    assert scores_by_id(result) == pytest.approx(
        {"a": 2 / 3, "c": 0.75, "b": 0.375, "e": 1 / 3, "d": 0.125}, abs=1e-6
    )
    assert result.ids == ("c", "a", "b", "e", "d")


def test_rrf_hand_case():
    # 1-based ranks; weights 1/2 each; k = 60
    result = fuse_lists([DENSE, GRAPH], fusion="rrf")
    expected = {
        "a": 0.5 / 61 + 0.5 / 63,
        "b": 0.5 / 62,
        "c": 0.5 / 63 + 0.5 / 61,
        "d": 0.5 / 64,
        "e": 0.5 / 62,
    }
    assert scores_by_id(result) == pytest.approx(expected, abs=1e-6)


def test_rrf_ties_share_the_average_rank():
    result = fuse_lists([(["x", "y"], [1.0, 1.0]), (["z"], [1.0])], fusion="rrf", params={"k": 1})
    assert scores_by_id(result) == pytest.approx({"x": 0.5 / 2.5, "y": 0.5 / 2.5, "z": 0.5 / 2})


def test_dbsf_matches_its_formula():
    result = fuse_lists([DENSE, GRAPH], fusion="dbsf", weights=[3, 1])
    fused: dict[str, float] = {}
    for (ids, raw), weight in zip([DENSE, GRAPH], [0.75, 0.25], strict=True):
        values = np.array(raw)
        low, high = values.mean() - 3 * values.std(), values.mean() + 3 * values.std()
        for doc, value in zip(ids, values, strict=True):
            fused[doc] = fused.get(doc, 0.0) + weight * (value - low) / (high - low)
    assert scores_by_id(result) == pytest.approx(fused, abs=1e-6)


def test_boltzmann_probabilities_hand_case():
    # E = [0, log 2, log 4]; T = c * mean(E) = log 2; P ∝ exp(-E / T) = [1, e^-1, e^-2]
    probs, temperature = boltzmann_probabilities(np.array([1.0, 0.5, 0.25]), epsilon=0.0, c=1.0)
    assert temperature == pytest.approx(math.log(2))
    expected = np.exp([0.0, -1.0, -2.0])
    np.testing.assert_allclose(probs, expected / expected.sum())


def test_boltzmann_matches_power_form_reference():
    # exp(-E/T) = (p + eps) ** (1 / T): an independent way to write the same distribution
    rng = np.random.default_rng(1)
    p = rng.uniform(0.01, 1.0, size=12)
    for c in (0.5, 1.0, 2.0):
        probs, temperature = boltzmann_probabilities(p, epsilon=1e-3, c=c)
        reference = (p + 1e-3) ** (1.0 / temperature)
        np.testing.assert_allclose(probs, reference / reference.sum(), rtol=1e-10)
        assert temperature == pytest.approx(c * float(np.mean(-np.log(p + 1e-3))))


def test_boltzmann_fusion_mixes_per_system_probabilities():
    result = fuse_lists([DENSE, GRAPH], fusion="boltzmann", weights=[1, 1])
    dense_p, _ = boltzmann_probabilities(np.array([1.0, 0.75, 0.5, 0.25]))
    graph_p, _ = boltzmann_probabilities(np.array([1.0, 2 / 3, 1 / 3]))
    expected = {
        "a": 0.5 * dense_p[0] + 0.5 * graph_p[2],
        "b": 0.5 * dense_p[1],
        "c": 0.5 * dense_p[2] + 0.5 * graph_p[0],
        "d": 0.5 * dense_p[3],
        "e": 0.5 * graph_p[1],
    }
    assert scores_by_id(result) == pytest.approx(expected, abs=1e-6)
    assert result.scores.sum() == pytest.approx(1.0)  # a mixture of two distributions


def test_pool_cap_keeps_the_best_of_each_list_before_calibrating():
    result = fuse_lists([DENSE, GRAPH], fusion="linear", pool_cap=[2, None])
    assert set(result.ids) == {"a", "b", "c", "e"}  # d dropped; c only via the graph
    row = result.ids.index("b")
    assert result.calibrated[row, 0] == pytest.approx(0.5)  # PIT within the capped pool of 2


def test_consensus_boost_multiplies_documents_found_twice():
    plain = scores_by_id(fuse_lists([DENSE, GRAPH], fusion="linear"))
    boosted = scores_by_id(fuse_lists([DENSE, GRAPH], fusion="linear", consensus_beta=0.5))
    assert boosted["a"] == pytest.approx(1.5 * plain["a"], abs=1e-6)
    assert boosted["b"] == pytest.approx(plain["b"], abs=1e-6)


def test_missing_documents_have_nan_raw_and_zero_calibrated():
    result = fuse_lists([DENSE, GRAPH], fusion="linear")
    row = result.ids.index("e")
    assert math.isnan(result.raw[row, 0]) and result.calibrated[row, 0] == 0.0
    assert result.present[row].tolist() == [False, True]


def test_empty_list_contributes_nothing_and_all_empty_gives_nothing():
    alone = fuse_lists([DENSE, ([], [])], fusion="linear", weights=[1, 1])
    assert alone.ids == ("a", "b", "c", "d")
    assert alone.scores.tolist() == pytest.approx([0.5, 0.375, 0.25, 0.125])
    assert len(fuse_lists([([], []), ([], [])])) == 0


def test_constant_scores_are_documented_ties():
    result = fuse_lists([(["x", "y"], [0.4, 0.4]), (["y"], [2.0])], fusion="linear")
    assert scores_by_id(result) == pytest.approx({"y": (0.75 + 1.0) / 2, "x": 0.75 / 2})


# --- pinned values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("calibration", "fusion", "expected"),
    [
        (
            "pit",
            "boltzmann",
            {"c": 0.397928, "a": 0.283389, "b": 0.152107, "e": 0.142861, "d": 0.023715},
        ),
        ("minmax", "linear", {"a": 0.5, "c": 0.75, "b": 0.4375, "e": 0.3, "d": 0.0}),
        (
            "zscore",
            "linear",
            {"c": 0.447292, "b": 0.361449, "e": 0.081111, "a": -0.126793, "d": -0.763058},
        ),
    ],
)
def test_pinned_fusions(calibration, fusion, expected):
    result = fuse_lists([DENSE, GRAPH], calibration=calibration, fusion=fusion)
    assert scores_by_id(result) == pytest.approx(expected, abs=1e-5)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lists", "kwargs", "message"),
    [
        ([], {}, "at least 2 score lists, got 0"),
        ([DENSE], {}, "at least 2 score lists, got 1"),
        (
            [DENSE, (["x", "y"], [0.1, float("nan")])],
            {},
            r"list 1: .*NaN or inf at positions \[1\]",
        ),
        ([DENSE, (["x", "x"], [0.2, 0.1])], {}, r"list 1: duplicate ids \['x'\]"),
        ([DENSE, (["x"], [0.2, 0.1])], {}, "list 1: 1 ids but scores of shape"),
        ([DENSE, GRAPH], {"weights": [1.0]}, "weights has 1 value.*2 lists"),
        ([DENSE, GRAPH], {"weights": [1.0, -1.0]}, r"weights must be finite and >= 0"),
        ([DENSE, GRAPH], {"weights": [0, 0]}, "must not all be 0"),
        (
            [DENSE, GRAPH],
            {"fusion": "comb"},
            r"unknown fusion 'comb'; choose from: boltzmann, dbsf",
        ),
        ([DENSE, GRAPH], {"calibration": "x"}, r"unknown calibration 'x'; choose from: max"),
        ([DENSE, GRAPH], {"params": {"t": 1}}, r"unknown parameter\(s\) \['t'\].*accepted: c, eps"),
        ([DENSE, GRAPH], {"params": {"c": -1}}, "c must be > 0 and finite, got -1"),
        ([DENSE, GRAPH], {"calibration": "zscore"}, "needs calibrated scores in \\[0, 1\\]"),
        ([DENSE, GRAPH], {"consensus_beta": -1}, "consensus_beta must be a finite number >= 0"),
        (
            [DENSE, GRAPH],
            {"calibration": "zscore", "fusion": "linear", "consensus_beta": 1},
            "can be negative",
        ),
        ([DENSE, GRAPH], {"pool_cap": [1, 2, 3]}, "pool_cap has 3 value"),
        ([DENSE, GRAPH], {"pool_cap": 0}, "positive integers or None, got 0"),
    ],
)
def test_bad_input_is_a_clear_error(lists, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fuse_lists(lists, **kwargs)


def test_inputs_are_left_unchanged():
    ids, scores = ["a", "b"], np.array([0.5, 0.2])
    other = (["b", "c"], [1.0, 3.0])
    fuse_lists([(ids, scores), other], pool_cap=1, consensus_beta=0.3)
    assert ids == ["a", "b"] and scores.tolist() == [0.5, 0.2]
    assert other == (["b", "c"], [1.0, 3.0])


def test_every_registered_fusion_runs_on_three_lists():
    lists = [DENSE, GRAPH, (["e", "f"], [2.0, 1.0])]
    for name in FUSIONS:
        result = fuse_lists(lists, fusion=name)
        assert sorted(result.ids) == ["a", "b", "c", "d", "e", "f"]
        assert np.all(np.diff(result.scores) <= 0)


def _candidates(*scored, **signals):
    from rag_multihop.types import Candidate, Passage

    return [Candidate(Passage(i, i), s, signals=signals) for i, s in scored]


def test_fuse_candidates_keeps_a_repeated_passage_at_its_best_score():
    from rag_multihop.fusion import FusionSettings, fuse_candidates

    repeated = {"dense": _candidates(("a", 0.2), ("b", 0.5), ("a", 0.9)), "bm25": []}
    once = {"dense": _candidates(("a", 0.9), ("b", 0.5)), "bm25": []}
    settings = FusionSettings(fusion="linear")
    assert fuse_candidates(repeated, settings) == fuse_candidates(once, settings)
    assert fuse_candidates(repeated, settings)[0].signals["dense"] == 0.9


def test_fuse_candidates_keeps_signals_of_the_systems_that_listed_a_passage_after_the_cap():
    from rag_multihop.fusion import FusionSettings, fuse_candidates

    lists = {
        "dense": _candidates(("a", 0.9), ("b", 0.1), seen_by_dense=1.0),
        "graph": _candidates(("c", 0.8), ("b", 0.2), seen_by_graph=1.0),
    }
    fused = fuse_candidates(lists, FusionSettings(fusion="linear", pool_cap={"graph": 1}), top_n=3)
    by_id = {c.id: c for c in fused}
    assert [c.rank for c in fused] == [1, 2, 3]
    assert set(by_id["b"].signals) == {"seen_by_dense", "dense", "dense_cal"}  # capped out of graph
    assert set(by_id["c"].signals) == {"seen_by_graph", "graph", "graph_cal"}
    assert fuse_candidates(lists, FusionSettings(fusion="linear"), top_n=1)[0].id in {"a", "c"}
    assert lists["dense"][0].signals == {"seen_by_dense": 1.0}  # inputs untouched


def test_fuse_candidates_refuses_what_is_not_a_candidate_and_unknown_system_names():
    from rag_multihop.fusion import FusionSettings, fuse_candidates

    with pytest.raises(TypeError, match="system 'dense' listed a tuple, not a Candidate"):
        fuse_candidates({"dense": [("a", 0.5)], "graph": []})  # type: ignore[list-item]
    for listed in (None, 3, "ab", _candidates(("a", 0.5))[0]):
        with pytest.raises(TypeError, match=r"system 'graph' gave a \w+, not a list of Cand"):
            fuse_candidates({"dense": [], "graph": listed})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"pool_cap names \['bm25'\] are not systems"):
        fuse_candidates(
            {"dense": _candidates(("a", 0.5)), "graph": []}, FusionSettings(pool_cap={"bm25": 3})
        )
    with pytest.raises(ValueError, match="fusion needs at least 2 score lists, got 1"):
        fuse_candidates({"dense": _candidates(("a", 0.5))})
