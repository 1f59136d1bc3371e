"""Bridge pool construction, PIT fusion of judge and retrieval, and output assembly."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop.bridge.judges import Judgement
from rag_multihop.bridge.pipeline import BRIDGE_SCORE, assemble, fuse_pool
from rag_multihop.bridge.pool import build_pool
from rag_multihop.fusion.calibration import pit
from rag_multihop.types import Candidate, Passage


def hits(*scored: tuple[str, float]) -> list[Candidate]:
    return [Candidate(Passage(i, f"text {i}"), s, rank=r) for r, (i, s) in enumerate(scored, 1)]


def test_pool_dedupes_with_max_score_and_records_provenance() -> None:
    pool = build_pool(
        "b",
        query_hits=[hits(("x", 0.5), ("y", 0.4)), hits(("x", 0.7))],
        entity_hits=[hits(("y", 0.9)), hits(("z", 0.3), ("x", 0.2))],
    )
    by_id = {c.id: c for c in pool}
    assert sorted(by_id) == ["x", "y", "z"]
    assert by_id["x"].score == 0.7 and by_id["x"].signals["retrieval"] == 0.7
    assert by_id["x"].signals["search_queries"] == 0.7
    assert by_id["x"].signals["search_e2"] == 0.2
    assert "search_e1" not in by_id["x"].signals
    assert by_id["y"].signals["search_e1"] == 0.9 and by_id["y"].signals["search_queries"] == 0.4
    assert [c.rank for c in pool] == [1, 2, 3]


def test_pool_leaves_out_the_bridge_and_ranks_without_it() -> None:
    pool = build_pool("b", [hits(("b", 0.99), ("x", 0.5))], [hits(("y", 0.6))])
    assert [c.id for c in pool] == ["y", "x"]  # both rank 1 once b is dropped; y scores higher
    assert all(c.signals["pool_rank"] == 1.0 for c in pool)


def test_pool_cap_keeps_best_ranks_so_entities_are_not_crowded_out() -> None:
    queries = [hits(*((f"q{j}{i}", 0.9 - 0.01 * i) for i in range(5))) for j in range(3)]
    entity = [hits(("e0", 0.1), ("e1", 0.05))]
    pool = build_pool(None, queries, entity, cap=4)
    assert len(pool) == 4
    assert "e0" in {c.id for c in pool}  # rank 1 in its search beats rank-2 query hits
    assert max(c.signals["pool_rank"] for c in pool) == 1.0


def test_pool_of_nothing_is_empty_and_cap_is_validated() -> None:
    assert build_pool("b", [], []) == []
    assert build_pool("b", [hits(("b", 1.0))], []) == []
    with pytest.raises(ValueError, match="cap must be a positive integer, got 0"):
        build_pool("b", [], [], cap=0)


def test_fuse_pool_matches_pit_by_hand_and_keeps_inputs() -> None:
    pool = [
        Candidate(Passage(i, i), s, signals={"retrieval": s})
        for i, s in [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]
    ]
    judge = np.array([0.2, 0.2, 1.0, 0.0])
    before = [(c.score, dict(c.signals)) for c in pool]
    fused = fuse_pool(pool, Judgement(judge), alpha=0.25)
    expected = 0.75 * pit(judge) + 0.25 * pit(np.array([0.9, 0.8, 0.7, 0.6]))
    by_id = {c.id: c.score for c in fused}
    assert [by_id[i] for i in "abcd"] == pytest.approx(expected.tolist())
    assert [c.id for c in fused] == ["c", "a", "b", "d"]
    assert fused[0].signals["judge"] == 1.0 and fused[0].signals["judge_cal"] == 1.0
    assert [(c.score, dict(c.signals)) for c in pool] == before  # inputs untouched


def test_fuse_pool_alpha_extremes() -> None:
    pool = [
        Candidate(Passage(i, i), s, signals={"retrieval": s}) for i, s in [("a", 0.9), ("b", 0.1)]
    ]
    judge = Judgement(np.array([0.0, 1.0]))
    assert [c.id for c in fuse_pool(pool, judge, alpha=0.0)] == ["b", "a"]
    assert [c.id for c in fuse_pool(pool, judge, alpha=1.0)] == ["a", "b"]
    assert fuse_pool([], Judgement(np.zeros(0)), alpha=0.1) == []


def test_assemble_puts_bridge_first_then_pool_then_backfill() -> None:
    bridge = Candidate(Passage("b", "b"), 0.95, 1, {"dense": 0.95})
    fused = [Candidate(Passage("x", "x"), 0.8, 1), Candidate(Passage("y", "y"), 0.4, 2)]
    hop1 = [bridge, Candidate(Passage("y", "y"), 0.5, 2), Candidate(Passage("z", "z"), 0.3, 3)]
    out = assemble(bridge, fused, hop1, k=10)
    assert [(c.id, c.rank) for c in out] == [("b", 1), ("x", 2), ("y", 3), ("z", 4)]
    assert out[0].score == BRIDGE_SCORE and out[0].signals["bridge"] == 1.0
    assert out[-1].score == 0.0 and out[-1].signals["backfill"] == 1.0
    assert [c.id for c in assemble(bridge, fused, hop1, k=2)] == ["b", "x"]
    assert [c.id for c in assemble(None, fused, hop1, k=10)] == ["x", "y", "b", "z"]
