"""The LlamaIndex benchmark peers: QueryFusionRetriever over our dense and BM25 retrievers."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.schema import MetadataMode, NodeWithScore

from rag_multihop.eval.methods.peers import LLAMA_INDEX_PEERS as FUSION_PEERS
from rag_multihop.eval.peers.llama_index import (
    PASSAGE_ID_KEY,
    LlamaIndexFusionPeer,
    candidate_to_node_with_score,
    node_to_candidate,
    passage_to_node,
)
from rag_multihop.types import Candidate, Passage, Query
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


def hand_peer(mode: str) -> tuple[LlamaIndexFusionPeer, FixedRetriever, FixedRetriever]:
    dense, bm25 = hand_children()
    return LlamaIndexFusionPeer(CORPUS, dense, bm25, mode=mode, child_k=3), dense, bm25


def scores(found: list[Candidate]) -> dict[str, float]:
    return {c.id: c.score for c in found}


# ---------------------------------------------------------------- conversions


def test_node_carries_id_text_title_and_same_hash_for_same_passage() -> None:
    node = passage_to_node(PASSAGES[3])
    assert node.node_id == "d"
    assert node.text == PASSAGES[3].text
    assert node.metadata == {"source": "wiki", "title": "Lyon", PASSAGE_ID_KEY: "d"}
    assert node.hash == passage_to_node(PASSAGES[3]).hash
    assert PASSAGE_ID_KEY not in node.get_content(metadata_mode=MetadataMode.LLM)
    assert "Lyon" in node.get_content(metadata_mode=MetadataMode.LLM)


def test_distinct_passages_with_same_text_and_title_hash_differently() -> None:
    twin_a, twin_b = Passage("x1", "same", title="T"), Passage("x2", "same", title="T")
    assert passage_to_node(twin_a).hash != passage_to_node(twin_b).hash


def test_node_to_candidate_looks_up_the_corpus_passage() -> None:
    candidate = Candidate(PASSAGES[1], 0.25, signals={"dense": 0.25})
    back = node_to_candidate(candidate_to_node_with_score(candidate), CORPUS, rank=3)
    assert back.passage is PASSAGES[1]
    assert (back.score, back.rank) == (0.25, 3)
    unscored = NodeWithScore(node=passage_to_node(PASSAGES[0]), score=None)
    assert node_to_candidate(unscored, CORPUS).score == 0.0


def test_node_to_candidate_rejects_unknown_ids() -> None:
    stranger = passage_to_node(Passage("zz", "not in the corpus"))
    with pytest.raises(KeyError, match="'zz'"):
        node_to_candidate(NodeWithScore(node=stranger, score=1.0), CORPUS)


# ---------------------------------------------------------------- fusion on a hand case


def test_rrf_scores_follow_the_llamaindex_formula() -> None:
    peer, _, _ = hand_peer("reciprocal_rerank")
    found = peer.retrieve(Query("capital of France"), k=4)
    expected = {"b": 1 / 61 + 1 / 60, "a": 1 / 60, "d": 1 / 61, "c": 1 / 62}
    assert [c.id for c in found] == ["b", "a", "d", "c"]
    assert scores(found) == pytest.approx(expected)
    assert [c.rank for c in found] == [1, 2, 3, 4]


def test_dist_based_scores_known_values() -> None:
    peer, _, _ = hand_peer("dist_based_score")
    found = peer.retrieve(Query("capital of France"), k=4)
    # dense: mean 0.6, population std sqrt(0.38/3); bm25: mean 2, std 1; each list weighted 1/2
    mu, sd = 0.6, float(np.sqrt(0.38 / 3))
    dense = {"a": 0.9, "b": 0.8, "c": 0.1}
    scaled = {pid: (s - (mu - 3 * sd)) / (6 * sd) for pid, s in dense.items()}
    expected = {
        "b": 0.5 * scaled["b"] + 0.5 * (3.0 + 1) / 6,
        "a": 0.5 * scaled["a"],
        "d": 0.5 * (1.0 + 1) / 6,
        "c": 0.5 * scaled["c"],
    }
    assert scores(found) == pytest.approx(expected)
    assert [c.id for c in found] == ["b", "a", "d", "c"]


def test_relative_scores_known_values() -> None:
    peer, _, _ = hand_peer("relative_score")
    found = peer.retrieve(Query("capital of France"), k=4)
    assert scores(found) == pytest.approx({"b": 0.5 * 0.875 + 0.5, "a": 0.5, "c": 0.0, "d": 0.0})
    assert [c.id for c in found][:2] == ["b", "a"]


def test_signals_hold_fused_and_child_scores() -> None:
    peer, _, _ = hand_peer("reciprocal_rerank")
    by_id = {c.id: c for c in peer.retrieve(Query("capital of France"), k=4)}
    assert dict(by_id["b"].signals) == pytest.approx(
        {"fused": 1 / 61 + 1 / 60, "dense": 0.8, "bm25": 3.0}
    )
    assert dict(by_id["a"].signals) == pytest.approx({"fused": 1 / 60, "dense": 0.9})
    # found by BM25 only: still fused in, with no dense signal
    assert dict(by_id["d"].signals) == pytest.approx({"fused": 1 / 61, "bm25": 1.0})


def test_children_get_child_depth_and_the_query_embedding() -> None:
    peer, dense, bm25 = hand_peer("reciprocal_rerank")
    vector = np.array([0.6, 0.8], dtype=np.float32)
    peer.retrieve(Query("capital of France", embedding=vector), k=2)
    (dense_query, dense_k), (_, bm25_k) = dense.calls[0], bm25.calls[0]
    assert (dense_k, bm25_k) == (3, 3)
    assert dense_query.text == "capital of France"
    assert dense_query.embedding is not None
    np.testing.assert_allclose(dense_query.embedding, vector)


def test_inputs_are_not_mutated() -> None:
    check_inputs_are_not_mutated(*hand_peer("dist_based_score"))


def test_ranking_does_not_depend_on_k() -> None:
    check_ranking_does_not_depend_on_k(hand_peer("dist_based_score")[0])


# ---------------------------------------------------------------- benchmark registration


@pytest.mark.parametrize("name", sorted(FUSION_PEERS))
def test_each_peer_returns_k_ranked_corpus_candidates_with_signals(name: str) -> None:
    check_peer_returns_ranked_corpus_candidates(name)


def test_the_registry_holds_the_three_peers() -> None:
    check_registered_as_peers(FUSION_PEERS)


def test_child_k_option() -> None:
    check_child_k_option()
