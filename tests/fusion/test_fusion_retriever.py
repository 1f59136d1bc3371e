from __future__ import annotations

import pytest

from rag_multihop import Candidate, Corpus, Passage, Query, Retriever
from rag_multihop.fusion import FusionRetriever

CORPUS = Corpus([Passage(pid, f"text {pid}") for pid in "abcde"])


class FixedRetriever:
    """Returns a fixed ranked list; records the k it was asked for."""

    def __init__(self, scored: list[tuple[str, float]], signal: str) -> None:
        self.candidates = [
            Candidate(CORPUS[pid], score, rank=r, signals={signal: score})
            for r, (pid, score) in enumerate(scored, start=1)
        ]
        self.asked: list[int] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        self.asked.append(k)
        return self.candidates[:k]


def make(**kwargs) -> tuple[FusionRetriever, FixedRetriever, FixedRetriever]:
    dense = FixedRetriever([("a", 0.9), ("b", 0.8), ("c", 0.5)], "dense")
    graph = FixedRetriever([("c", 0.3), ("d", 0.2)], "graph")
    return FusionRetriever({"dense": dense, "graph": graph}, **kwargs), dense, graph


def test_fused_candidates_keep_raw_and_calibrated_scores_of_each_system():
    fusion, _, _ = make(fusion="linear")
    top = fusion.retrieve(Query("q"), k=10)
    assert isinstance(fusion, Retriever)
    assert [c.id for c in top] == ["c", "a", "b", "d"]
    assert [c.rank for c in top] == [1, 2, 3, 4]
    assert dict(top[0].signals) == pytest.approx(
        {"dense": 0.5, "dense_cal": 1 / 3, "graph": 0.3, "graph_cal": 1.0}
    )
    assert dict(top[3].signals) == {"graph": 0.2, "graph_cal": 0.5}  # dense did not list d
    assert top[0].passage is CORPUS["c"]


def test_k_truncates_and_child_k_is_what_children_are_asked_for():
    fusion, dense, graph = make(child_k=7)
    assert len(fusion.retrieve(Query("q"), k=2)) == 2
    assert dense.asked == [7] and graph.asked == [7]


def test_weights_and_pool_caps_by_name():
    fusion, _, _ = make(
        fusion="linear", weights={"dense": 0.0, "graph": 1.0}, pool_cap={"graph": 1}
    )
    top = fusion.retrieve(Query("q"), k=10)
    assert top[0].id == "c" and top[0].score == pytest.approx(1.0)
    assert "graph" not in top[-1].signals  # d was capped out of the graph pool
    assert fusion.settings.per_system(fusion.names)[1] == [None, 1]


def test_children_candidates_are_not_mutated():
    fusion, dense, _ = make()
    before = [(c.score, c.rank, dict(c.signals)) for c in dense.candidates]
    fusion.retrieve(Query("q"), k=3)
    assert [(c.score, c.rank, dict(c.signals)) for c in dense.candidates] == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fusion": "mean"}, r"unknown fusion 'mean'; choose from: boltzmann, dbsf, linear, rrf"),
        ({"calibration": "zscore"}, r"needs calibrated scores in \[0, 1\]"),
        ({"weights": [1.0]}, "weights has 1 value"),
        ({"weights": {"dense": 1.0}}, r"weights has no value for systems \['graph'\]"),
        ({"weights": {"dense": 1, "graph": 1, "bm25": 1}}, r"\['bm25'\] are not systems"),
        ({"pool_cap": {"sparse": 3}}, r"\['sparse'\] are not systems"),
        ({"child_k": 0}, "child_k must be a positive integer, got 0"),
        ({"params": {"k": 3}}, r"unknown parameter\(s\) \['k'\] for fusion 'boltzmann'"),
    ],
)
def test_bad_settings_fail_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make(**kwargs)


def test_fewer_than_two_retrievers_or_no_names_is_an_error():
    single = FixedRetriever([("a", 1.0)], "dense")
    with pytest.raises(ValueError, match=r"at least 2 retrievers, got 1 \(\['dense'\]\)"):
        FusionRetriever({"dense": single})
    with pytest.raises(ValueError, match="must be a mapping"):
        FusionRetriever([single, single])  # type: ignore[arg-type]


def test_a_child_that_finds_nothing_is_fine():
    dense = FixedRetriever([("a", 0.9), ("b", 0.1)], "dense")
    empty = FixedRetriever([], "graph")
    top = FusionRetriever({"dense": dense, "graph": empty}).retrieve(Query("q"), k=5)
    assert [c.id for c in top] == ["a", "b"]
