"""Non-finite scores are rejected where they enter; huge finite scores do not overflow;
fusion names a missing system (docs/guarantees.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query
from rag_multihop.fusion import FusionRetriever, fuse_lists
from rag_multihop.fusion.calibration import calibrate
from rag_multihop.types import rank_candidates

P = Passage("p1", "text")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float32("nan"), "0.5", None])
def test_candidates_refuse_non_finite_scores_naming_the_passage(bad: object) -> None:
    with pytest.raises(ValueError, match=r"Candidate 'p1': score must be a finite number"):
        Candidate(P, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score must be a finite number"):
        Candidate(P, 0.5).with_score(bad)  # type: ignore[arg-type]


def test_numpy_scores_are_accepted_as_floats() -> None:
    ranked = rank_candidates([Candidate(P, np.float32(0.25)), Candidate(Passage("p2", "t"), 1)])
    assert [c.id for c in ranked] == ["p2", "p1"] and isinstance(ranked[1].score, float)


@pytest.mark.parametrize("name", ["pit", "minmax", "zscore", "max"])
def test_calibration_rejects_nan_with_its_position(name: str) -> None:
    with pytest.raises(ValueError, match=rf"calibration '{name}'.*positions \[1\]"):
        calibrate(name, np.array([0.1, np.nan, 0.3]))


@pytest.mark.parametrize("name", ["pit", "minmax", "zscore", "max"])
def test_calibration_of_huge_finite_scores_stays_finite_and_ordered(name: str) -> None:
    out = calibrate(name, np.array([1e308, -1e308, 5e307]))
    assert np.isfinite(out).all()
    assert np.argsort(-out).tolist() == [0, 2, 1]


@pytest.mark.parametrize(
    ("calibration", "fusion"),
    [("minmax", "linear"), ("zscore", "linear"), ("pit", "boltzmann"), ("pit", "dbsf")],
)
def test_fusion_of_huge_finite_scores_stays_finite(calibration: str, fusion: str) -> None:
    lists = [(["a", "b", "c"], [1.7e308, -1.7e308, 0.0]), (["b", "c"], [1e300, -1e300])]
    result = fuse_lists(lists, calibration=calibration, fusion=fusion)
    assert np.isfinite(result.scores).all()


class Fixed:
    def __init__(self, *scored: tuple[str, float]) -> None:
        self.found = [Candidate(Passage(pid, pid), s) for pid, s in scored]

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.found[:k]


def test_fusion_names_the_missing_system() -> None:
    fusion = FusionRetriever({"dense": Fixed(("a", 0.9)), "graph": Fixed(("b", 0.4))})
    with pytest.raises(
        ValueError, match=r"no list for system\(s\) \['graph'\].*\['dense', 'graph'\]"
    ):
        fusion.fuse({"dense": fusion.retrievers["dense"].found})
    fused = fusion.fuse({"dense": fusion.retrievers["dense"].found, "graph": []})
    assert [c.id for c in fused] == ["a"]
