"""Every knob a component shares with a core settings dataclass has the core's default
(or ``None``, "not given: the core decides"), and a bad value fails with the core's message:
the adapters copy no default and check no knob themselves."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

pytest.importorskip("haystack")

from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.rankers.rag_multihop import (
    AssociationRanker,
    BridgeJudgeRanker,
)
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    EntityGraphRetriever,
)

from rag_multihop.association.settings import AssociationSettings
from rag_multihop.bridge import BridgeSettings
from rag_multihop.fusion import FusionSettings
from rag_multihop.graph import GraphSettings

COMPONENTS = [
    (AssociationRanker, AssociationSettings, {"lambda_", "mode", "first_stage_margin"}),
    (BridgeJudgeRanker, BridgeSettings, {"alpha", "bridge_position"}),
    (BridgeRetriever, BridgeSettings, {"alpha", "bridge_position"}),
    (
        EntityGraphRetriever,
        GraphSettings,
        {"seed_top_n", "entity_share", "use_entities", "damping"},
    ),
    (PITDocumentJoiner, FusionSettings, {"calibration", "fusion", "pool_cap", "consensus_beta"}),
]


def init_defaults(component: type) -> dict[str, Any]:
    parameters = inspect.signature(component.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def core_defaults(settings: type) -> dict[str, Any]:
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(settings)
    }


@pytest.mark.parametrize(("component", "settings", "expected"), COMPONENTS)
def test_every_shared_knob_has_the_core_default(component, settings, expected):
    ours, core = init_defaults(component), core_defaults(settings)
    shared = set(ours) & set(core)
    assert expected <= shared
    for name in shared:
        assert ours[name] is None or ours[name] == core[name], (component.__name__, name)


def embedding_retriever() -> InMemoryEmbeddingRetriever:
    return InMemoryEmbeddingRetriever(InMemoryDocumentStore())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: AssociationRanker("m", lambda_=-1), r"lambda_ must be in \[0, 1\], got -1"),
        (lambda: AssociationRanker("m", mode="both"), r"mode must be one of"),
        (lambda: BridgeJudgeRanker(alpha=1.5), r"alpha must be in \[0, 1\], got 1.5"),
        (
            lambda: BridgeRetriever(embedding_retriever(), bridge_position="last"),
            "bridge_position must be one of",
        ),
        (
            lambda: EntityGraphRetriever(InMemoryDocumentStore(), entity_share=2.0),
            r"entity_share must be in \[0, 1\], got 2.0",
        ),
        (
            lambda: EntityGraphRetriever(InMemoryDocumentStore(), seed_top_n=0),
            "seed_top_n must be a positive integer",
        ),
    ],
)
def test_bad_knobs_fail_with_the_core_message(build, message):
    with pytest.raises(ValueError, match=message):
        build()
