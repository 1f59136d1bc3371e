"""Every knob a component shares with a core settings dataclass has the core's default
(or ``None``, "not given: the core decides"), and a bad value fails with the core's message:
the adapters copy no default and check no knob themselves."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.schema import TextNode
from llama_index.postprocessor.rag_multihop import AssociationRerank, BridgeJudgeRerank
from llama_index.retrievers.rag_multihop import (
    BridgeRetriever,
    EntityGraphRetriever,
    PITFusionRetriever,
)

from rag_multihop.association.settings import AssociationSettings
from rag_multihop.bridge import BridgeSettings
from rag_multihop.fusion import FusionSettings
from rag_multihop.graph import GraphSettings

COMPONENTS = [
    (AssociationRerank, AssociationSettings, {"lambda_", "mode"}),
    (BridgeJudgeRerank, BridgeSettings, {"alpha", "bridge_position"}),
    (BridgeRetriever, BridgeSettings, {"alpha", "bridge_position"}),
    (
        EntityGraphRetriever,
        GraphSettings,
        {"seed_top_n", "entity_share", "use_entities", "damping"},
    ),
    (PITFusionRetriever, FusionSettings, {"calibration", "fusion", "pool_cap", "consensus_beta"}),
]


def component_defaults(component: type) -> dict[str, Any]:
    if issubclass(component, BaseModel):
        return {name: field.default for name, field in component.model_fields.items()}
    parameters = inspect.signature(component.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def core_defaults(settings: type) -> dict[str, Any]:
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(settings)
    }


@pytest.mark.parametrize(("component", "settings", "expected"), COMPONENTS)
def test_every_shared_knob_has_the_core_default(component, settings, expected):
    ours, core = component_defaults(component), core_defaults(settings)
    shared = set(ours) & set(core)
    assert expected <= shared
    for name in shared:
        assert ours[name] is None or ours[name] == core[name], (component.__name__, name)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: AssociationRerank(model_path="m", lambda_=1.5), r"lambda_ must be in \[0, 1\]"),
        (lambda: BridgeJudgeRerank(alpha=-0.1), r"alpha must be in \[0, 1\], got -0.1"),
        (lambda: BridgeJudgeRerank(bridge_position="last"), "bridge_position must be one of"),
        (
            lambda: EntityGraphRetriever.from_nodes([TextNode(id_="a", text="A.")], damping=1.0),
            r"damping must be in \[0, 1\), got 1.0",
        ),
    ],
)
def test_bad_knobs_fail_with_the_core_message(build, message):
    with pytest.raises(ValueError, match=message):
        build()
