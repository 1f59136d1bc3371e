"""The Haystack benchmark peers: DocumentJoiner over our dense and BM25 retrievers."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import warnings

import numpy as np
import pytest

pytest.importorskip("haystack")

from haystack import Document

from rag_multihop.eval.methods.peers import HAYSTACK_PEERS as JOINER_PEERS
from rag_multihop.eval.peers.haystack import (
    HaystackJoinerPeer,
    candidate_to_document,
    document_to_candidate,
    passage_to_document,
)
from rag_multihop.types import Candidate, Query
from tests.eval.peer_checks import (
    CORPUS,
    PASSAGES,
    FixedRetriever,
    check_child_k_option,
    check_inputs_are_not_mutated,
    check_peer_returns_ranked_corpus_candidates,
    check_ranking_does_not_depend_on_k,
    check_registered_as_peers,
    hand_children,
)


def hand_peer(join_mode: str) -> tuple[HaystackJoinerPeer, FixedRetriever, FixedRetriever]:
    dense, bm25 = hand_children()
    return HaystackJoinerPeer(CORPUS, dense, bm25, join_mode=join_mode, child_k=3), dense, bm25


def scores(found: list[Candidate]) -> dict[str, float]:
    return {c.id: c.score for c in found}


# ---------------------------------------------------------------- conversions


def test_document_carries_id_content_title_and_score() -> None:
    doc = candidate_to_document(Candidate(PASSAGES[3], 0.7))
    assert (doc.id, doc.content, doc.score) == ("d", PASSAGES[3].text, 0.7)
    assert doc.meta == {"source": "wiki", "title": "Lyon"}
    assert passage_to_document(PASSAGES[0]).score is None


def test_document_to_candidate_looks_up_the_corpus_passage() -> None:
    doc = candidate_to_document(Candidate(PASSAGES[1], 0.25))
    back = document_to_candidate(doc, CORPUS, rank=2)
    assert back.passage is PASSAGES[1]
    assert (back.score, back.rank) == (0.25, 2)
    assert document_to_candidate(passage_to_document(PASSAGES[0]), CORPUS).score == 0.0
    with pytest.raises(KeyError, match="'zz'"):
        document_to_candidate(Document(id="zz", content="stranger"), CORPUS)


def test_conversion_never_mutates_documents() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Haystack 3 warns on in-place Document mutation
        candidate_to_document(Candidate(PASSAGES[2], 1.5))
        hand_peer("distribution_based_rank_fusion")[0].retrieve(Query("capital"), k=4)


# ---------------------------------------------------------------- fusion on a hand case


def test_rrf_scores_follow_the_haystack_formula() -> None:
    peer, _, _ = hand_peer("reciprocal_rank_fusion")
    found = peer.retrieve(Query("capital of France"), k=4)
    # score = sum over lists of w * 61 / (61 + rank0), w = 1/2
    expected = {
        "b": 0.5 * (61 / 62 + 61 / 61),
        "a": 0.5 * 61 / 61,
        "d": 0.5 * 61 / 62,
        "c": 0.5 * 61 / 63,
    }
    assert [c.id for c in found] == ["b", "a", "d", "c"]
    assert scores(found) == pytest.approx(expected)
    assert [c.rank for c in found] == [1, 2, 3, 4]


def test_dbsf_scores_known_values() -> None:
    peer, _, _ = hand_peer("distribution_based_rank_fusion")
    found = peer.retrieve(Query("capital of France"), k=4)
    # dense: mean 0.6, population std sqrt(0.38/3); bm25: mean 2, std 1; max over lists
    mu, sd = 0.6, float(np.sqrt(0.38 / 3))
    dense = {"a": 0.9, "b": 0.8, "c": 0.1}
    scaled = {pid: (s - (mu - 3 * sd)) / (6 * sd) for pid, s in dense.items()}
    expected = {
        "b": max(scaled["b"], (3.0 + 1) / 6),
        "a": scaled["a"],
        "d": (1.0 + 1) / 6,
        "c": scaled["c"],
    }
    assert scores(found) == pytest.approx(expected)
    assert [c.id for c in found] == ["b", "a", "d", "c"]


def test_signals_hold_fused_and_child_scores() -> None:
    peer, _, _ = hand_peer("reciprocal_rank_fusion")
    by_id = {c.id: c for c in peer.retrieve(Query("capital of France"), k=4)}
    assert dict(by_id["b"].signals) == pytest.approx(
        {"fused": 0.5 * (61 / 62 + 1), "dense": 0.8, "bm25": 3.0}
    )
    assert dict(by_id["a"].signals) == pytest.approx({"fused": 0.5, "dense": 0.9})
    # found by BM25 only: still joined, with no dense signal
    assert dict(by_id["d"].signals) == pytest.approx({"fused": 0.5 * 61 / 62, "bm25": 1.0})


def test_children_get_child_depth_and_the_query() -> None:
    peer, dense, bm25 = hand_peer("reciprocal_rank_fusion")
    query = Query("capital of France", embedding=np.array([0.6, 0.8], dtype=np.float32))
    peer.retrieve(query, k=2)
    assert dense.calls == [(query, 3)]
    assert bm25.calls == [(query, 3)]


def test_inputs_are_not_mutated() -> None:
    check_inputs_are_not_mutated(*hand_peer("distribution_based_rank_fusion"))


def test_ranking_does_not_depend_on_k() -> None:
    check_ranking_does_not_depend_on_k(hand_peer("reciprocal_rank_fusion")[0])


# ---------------------------------------------------------------- benchmark registration


@pytest.mark.parametrize("name", sorted(JOINER_PEERS))
def test_each_peer_returns_k_ranked_corpus_candidates_with_signals(name: str) -> None:
    check_peer_returns_ranked_corpus_candidates(name)


def test_the_registry_holds_the_two_peers() -> None:
    check_registered_as_peers(JOINER_PEERS)


def test_child_k_option() -> None:
    check_child_k_option()
