"""The settings pattern: the number/choice checks, one frozen settings object per method,
keyword overrides beside it, and the old per-knob attributes as read-only views."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag_multihop import Corpus, Passage
from rag_multihop._settings import resolve_settings
from rag_multihop.association import AssociationReranker, AssociationRetriever
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.bridge import BridgeReranker, BridgeRetriever, BridgeSettings, JudgeWeights
from rag_multihop.coop.settings import CoopSettings, FineTuneSettings, RaLaSettings
from rag_multihop.fusion import FusionRetriever, FusionSettings
from rag_multihop.graph import GraphRetriever, GraphSettings, build_entity_graph
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.validation import check_choice, check_int, check_number


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (1.0, {"low": 0, "high": 1, "high_open": True}, r"x must be in \[0, 1\), got 1.0"),
        (0.0, {"low": 0, "low_open": True}, "x must be a finite number > 0, got 0.0"),
        (-1, {"low": 0}, "x must be a finite number >= 0, got -1"),
        (5, {"high": 2}, "x must be a finite number <= 2, got 5"),
        (float("nan"), {}, "x must be a finite number, got nan"),
        (float("inf"), {"low": 0}, "x must be a finite number >= 0, got inf"),
        (True, {}, "x must be a finite number, got True"),
        ("0.5", {}, "x must be a finite number, got '0.5'"),
    ],
)
def test_check_number_names_the_parameter_value_and_range(value, kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_number(value, "x", **kwargs)


def test_check_number_and_int_accept_numpy_scalars():
    assert check_number(np.float32(0.5), "x", low=0, high=1) == 0.5
    assert check_int(np.int64(3), "n", low=0) == 3
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 10\], got 2.5"):
        check_int(2.5, "n", low=1, high=10)
    with pytest.raises(ValueError, match="n must be an integer, got False"):
        check_int(False, "n")


def test_check_choice_lists_the_choices():
    assert check_choice("b", "mode", {"a": 1, "b": 2}) == "b"
    with pytest.raises(ValueError, match=r"mode must be one of \['a', 'b'\], got None"):
        check_choice(None, "mode", ("b", "a"))


def test_resolve_settings_applies_given_overrides_only():
    base = GraphSettings(damping=0.3)
    assert resolve_settings(GraphSettings, base, damping=None) is base
    assert resolve_settings(GraphSettings, base, seed_top_n=4).damping == 0.3
    with pytest.raises(TypeError, match="settings must be a GraphSettings, got BridgeSettings"):
        resolve_settings(GraphSettings, BridgeSettings())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: GraphSettings(seed_top_n=0), "seed_top_n must be a positive integer"),
        (lambda: GraphSettings(ppr="fast"), r"ppr must be one of \['auto', 'power', 'push'\]"),
        (lambda: GraphSettings(tol=0.0), "tol must be a finite number > 0"),
        (lambda: GraphSettings(pool_cap=0), "pool_cap must be a positive integer"),
        (lambda: GraphSettings(use_entities="yes"), "use_entities must be True or False"),
        (lambda: FusionSettings(fusion="nope"), "unknown fusion 'nope'"),
        (lambda: FusionSettings(weights=[1.0, -1.0]), "weights must be finite and >= 0"),
        (lambda: FusionSettings(pool_cap={"graph": 0}), "pool_cap values must be positive"),
        (lambda: FusionSettings(child_k=0), "child_k must be a positive integer"),
        (lambda: FusionSettings(consensus_beta=-1), "consensus_beta must be a finite number"),
        (lambda: AssociationSettings(mode="sideways"), "mode must be one of"),
        (lambda: AssociationSettings(candidates=0), "candidates must be a positive integer"),
        (lambda: BridgeSettings(entities=-1), "entities must be an integer >= 0, got -1"),
        (lambda: BridgeSettings(templates=()), "templates must name at least one of"),
        (lambda: BridgeSettings(judge_weights=(1, 0, 1, 1)), "judge_weights must be Judge"),
        (lambda: JudgeWeights(question=float("nan")), "JudgeWeights.question must be a finite"),
        (lambda: CoopSettings(top_k=0), "top_k must be a positive integer, got 0"),
        (lambda: CoopSettings(keyextract_rounds=-1), "keyextract_rounds must be an integer >= 0"),
        (lambda: RaLaSettings(candidates=0), "candidates must be a positive integer, got 0"),
        (lambda: FineTuneSettings(threads=0), "threads must be a positive integer, got 0"),
    ],
)
def test_each_settings_object_refuses_bad_knobs_at_construction(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_settings_are_frozen_and_keep_their_mappings_read_only():
    settings = FusionSettings(weights={"dense": 1.0, "graph": 2.0}, params={"c": 2.0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.child_k = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.params["c"] = 3.0  # type: ignore[index]
    assert FusionSettings(weights=[1, 2]).weights == (1, 2)
    assert BridgeSettings(templates=["question"]).templates == ("question",)


CORPUS = Corpus(
    [
        Passage("a", "Polish Wedding is a film by Theresa Connelly.", "Polish Wedding"),
        Passage("b", "Theresa Connelly is an American director.", "Theresa Connelly"),
    ]
)


def test_classes_take_settings_plus_keyword_overrides_and_show_the_old_attributes():
    graph = build_entity_graph(CORPUS)
    retriever = GraphRetriever(graph, CORPUS, settings=GraphSettings(damping=0.3), seed_top_n=4)
    assert (retriever.settings.damping, retriever.settings.seed_top_n) == (0.3, 4)
    assert (retriever.damping, retriever.seed_top_n, retriever.ppr) == (0.3, 4, "auto")
    with pytest.raises(AttributeError):
        retriever.damping = 0.9  # type: ignore[misc]

    fusion = FusionRetriever({"x": retriever, "y": retriever}, settings=FusionSettings(child_k=7))
    assert (fusion.child_k, fusion.fusion) == (7, "boltzmann")
    with pytest.raises(ValueError, match=r"weights names \['z'\] are not systems"):
        FusionRetriever({"x": retriever, "y": retriever}, weights={"x": 1.0, "z": 1.0})

    reranker = AssociationReranker(settings=AssociationSettings(lambda_=0.2), mode="reverse")
    assert (reranker.lambda_, reranker.mode) == (0.2, "reverse")
    other = reranker.with_settings(AssociationSettings(candidates=30))
    assert (other.lambda_, other.settings.candidates) == (0.5, 30)
    assert AssociationRetriever(retriever, other).candidates == 30
    assert AssociationRetriever(retriever, other, candidates=5).candidates == 5


def test_bridge_classes_read_one_settings_object(hashing_encoder):
    settings = BridgeSettings(alpha=0.3, entities=2, templates=("question",))
    reranker = BridgeReranker.llm_free(hashing_encoder, settings=settings, bridge_position="judged")
    assert (reranker.alpha, reranker.bridge_position) == (0.3, "judged")
    assert (reranker.writer.n_entities, reranker.writer.templates) == (2, ("question",))
    dense = DenseRetriever.from_corpus(CORPUS, hashing_encoder)
    bridge = BridgeRetriever.llm_free(
        dense, settings=BridgeSettings(judge_weights=JudgeWeights(1, 1, 1, 1))
    )
    assert bridge.judge.weights == JudgeWeights(1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"bridge_position must be one of \['first', 'judged'\]"):
        BridgeReranker.llm_free(hashing_encoder, bridge_position="last")
