"""The signal vocabulary: every method's results carry only the names its packages declare."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rag_multihop import Corpus, Query, association, bridge, coop, fusion, graph, index, multihop
from rag_multihop.signals import check_signals, is_template, signal_meaning, undeclared
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

QUERY = Query(POLISH_WEDDING_QUESTION)
PACKAGES = ["association", "bridge", "coop", "fusion", "graph", "index", "multihop"]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(polish_wedding_passages())


@pytest.fixture(scope="module")
def encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="module")
def dense(corpus, encoder) -> index.DenseRetriever:
    return index.DenseRetriever.from_corpus(corpus, encoder)


@pytest.fixture(scope="module")
def entity_graph(corpus) -> graph.EntityGraph:
    return graph.build_entity_graph(corpus)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_method_package_declares_its_signals(name: str) -> None:
    vocabulary = importlib.import_module(f"rag_multihop.{name}").SIGNALS
    assert vocabulary and "SIGNALS" in importlib.import_module(f"rag_multihop.{name}").__all__
    for signal, meaning in vocabulary.items():
        assert meaning.strip() and len(meaning) <= 90, signal
        if is_template(signal):  # every template compiles and covers an instance
            instance = signal.replace("<i>", "1").replace("<system>", "dense")
            assert signal_meaning(instance, vocabulary) is not None


def test_templates_fill_in_and_exact_names_win() -> None:
    assert signal_meaning("search_e3", bridge.SIGNALS) == "score in the search for bridge entity 3"
    assert signal_meaning("search_2_cal", coop.SIGNALS).startswith("search 2 score calibrated")
    judge_cal = signal_meaning("judge_cal", bridge.SIGNALS, fusion.SIGNALS)
    assert judge_cal == bridge.SIGNALS["judge_cal"]
    assert signal_meaning("dense_cal", fusion.SIGNALS, systems={"graph"}) is None
    assert undeclared(["search_ex", "search_e1", "Dense"], bridge.SIGNALS) == ["Dense", "search_ex"]
    assert undeclared(["search_ex", "Dense"], bridge.SIGNALS, fusion.SIGNALS) == ["Dense"]
    with pytest.raises(ValueError, match=r"undeclared signal name\(s\) \['graph'\]"):
        check_signals([{"dense": 1.0, "graph": 0.5}], index.SIGNALS)
    with pytest.raises(ValueError, match="unknown placeholder <n>"):
        signal_meaning("x1", {"x<n>": "bad"})


def test_first_stages(corpus, dense) -> None:
    check_signals(dense.retrieve(QUERY, k=5), index.SIGNALS)
    check_signals(index.BM25Retriever(corpus).retrieve(QUERY, k=5), index.SIGNALS)


def test_fusion_and_graph(corpus, dense, entity_graph) -> None:
    walk = graph.GraphRetriever(entity_graph, corpus, seed_retriever=dense)
    found = walk.retrieve(QUERY, k=5)
    check_signals(found, graph.SIGNALS)
    fused = fusion.FusionRetriever({"dense": dense, "graph": walk}).retrieve(QUERY, k=5)
    assert {"dense_cal", "graph_cal"} <= set().union(*(c.signals for c in fused))
    check_signals(fused, fusion.SIGNALS, index.SIGNALS, graph.SIGNALS, systems={"dense", "graph"})
    with pytest.raises(ValueError, match="graph_cal"):
        check_signals(fused, fusion.SIGNALS, index.SIGNALS, graph.SIGNALS, systems={"dense"})


def test_association(corpus, dense, encoder) -> None:
    vectors = encoder.encode(corpus.texts())
    pairs = association.PairSet.from_pairs(
        [("polish-wedding", "theresa-connelly"), ("theresa-connelly", "philadelphia")],
        source="gold",
    )
    config = association.TrainingConfig(epochs=2, batch_size=2, seed=0)
    reranker = association.AssociationReranker(encoder=encoder, training=config).fit(
        corpus.ids, vectors, pairs, encoder_name=encoder.name
    )
    found = association.AssociationRetriever(dense, reranker).retrieve(QUERY, k=3)
    assert {"association", "cosine", "dense"} <= set(found[0].signals)
    check_signals(found, association.SIGNALS, index.SIGNALS)


@pytest.mark.parametrize("position", ["first", "judged"])
def test_bridge(dense, encoder, position: str) -> None:
    settings = bridge.BridgeSettings(bridge_position=position)
    found = bridge.BridgeRetriever.llm_free(dense, settings=settings).retrieve(QUERY, k=5)
    names = set().union(*(c.signals for c in found))
    assert {"judge", "judge_cal", "fused", "pool_rank"} <= names
    assert any(n.startswith("search_e") for n in names)
    check_signals(found, bridge.SIGNALS, index.SIGNALS)
    reranked = bridge.BridgeReranker.llm_free(encoder, settings=settings).rerank(
        QUERY, dense.retrieve(QUERY, k=5)
    )
    check_signals(reranked, bridge.SIGNALS, index.SIGNALS)


def test_multihop(corpus, encoder) -> None:
    found = multihop.MultiHopRetriever.from_corpus(corpus, encoder).retrieve(QUERY, k=5)
    names = set().union(*(c.signals for c in found))
    assert {"pair", "first_hop", "named", "fused"} <= names
    check_signals(found, multihop.SIGNALS)


def test_coop_uar_sub_questions(dense) -> None:
    class Fixed:
        def unroll(self, question: str):
            subs = ("Who directed Polish Wedding?", "Where was Theresa Connelly born?")
            return coop.Unrolling(question, subs), None

        async def aunroll(self, question: str):
            return self.unroll(question)

    found = coop.UARRetriever(dense, Fixed(), uar_mode="sub-questions").retrieve(QUERY, k=5)
    assert {"uar", "search_0", "search_2_cal"} <= set().union(*(c.signals for c in found))
    check_signals(found, coop.SIGNALS, index.SIGNALS)


@pytest.mark.parametrize("scoring", ["maxsim", "gap-weighted", "layer-gap"])
def test_coop_rala(dense, minilm, scoring: str) -> None:
    rala = coop.RaLaReranker(coop.HiddenStateEncoder(minilm), scoring=scoring)
    result = coop.CoopRetriever(dense, reranker=rala, settings=coop.CoopSettings(candidates=5))
    found = result.retrieve(QUERY, k=5)
    assert "rala" in found[0].signals and np.isfinite(found[0].score)
    check_signals(found, coop.SIGNALS, index.SIGNALS)
