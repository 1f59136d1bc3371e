"""Every knob a component shares with a core settings dataclass has the core's default
(or ``None``, "not given: the core decides"), and a bad value fails with the core's message:
the adapters copy no default and check no knob themselves."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding as Fake
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.schema import TextNode
from llama_index.postprocessor.rag_multihop import AssociationRerank, BridgeJudgeRerank
from llama_index.retrievers.rag_multihop import (
    BridgeRetriever,
    CoopRetriever,
    CorpusIndexMultiHopRetriever,
    EntityGraphRetriever,
    MultiHopRetriever,
    PITFusionRetriever,
)

from rag_multihop.association.settings import AssociationSettings
from rag_multihop.bridge import BridgeSettings
from rag_multihop.coop import CoopSettings
from rag_multihop.fusion import FusionSettings
from rag_multihop.graph import GraphSettings
from rag_multihop.multihop import MultiHopSettings

COMPONENTS = [
    (AssociationRerank, AssociationSettings, {"lambda_", "mode", "first_stage_margin"}),
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


RETRIEVERS = [
    (BridgeRetriever, BridgeSettings, {"alpha", "bridge_position"}),
    (CoopRetriever, CoopSettings, {"candidates", "reader_top_k", "uar_mode", "keyextract_rounds"}),
    (EntityGraphRetriever, GraphSettings, {"seed_top_n", "entity_share", "use_entities"}),
    (MultiHopRetriever, MultiHopSettings, {f.name for f in dataclasses.fields(MultiHopSettings)}),
    (
        CorpusIndexMultiHopRetriever,
        MultiHopSettings,
        {f.name for f in dataclasses.fields(MultiHopSettings)},
    ),
    (PITFusionRetriever, FusionSettings, {"calibration", "fusion", "pool_cap", "params"}),
]


@pytest.mark.parametrize(("retriever", "settings", "overrides"), RETRIEVERS)
def test_retrievers_take_settings_and_typed_overrides(retriever, settings, overrides):
    """The package's one rule for retrievers: ``settings=`` (the core object) and a typed
    keyword per knob, ``None`` meaning "keep the settings' value" (no ``**overrides``)."""
    parameters = inspect.signature(retriever.__init__).parameters
    assert parameters["settings"].default is None
    assert settings.__name__ in str(parameters["settings"].annotation)
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for name in overrides:
        assert parameters[name].default is None, (retriever.__name__, name)


def test_settings_and_overrides_merge_in_the_core():
    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle):
            return []

    bridge = BridgeRetriever(
        Fixed(), settings=BridgeSettings(alpha=0.3), bridge_position="judged", embed_model=Fake()
    )
    assert bridge.settings == BridgeSettings(alpha=0.3, bridge_position="judged")
    coop = CoopRetriever(Fixed(), rala=False, settings=CoopSettings(candidates=20), reader_top_k=3)
    assert coop.settings == CoopSettings(candidates=20, top_k=3)
    with pytest.raises(ValueError, match="top_k"):
        CoopRetriever(Fixed(), rala=False, reader_top_k=0)
    with pytest.raises(TypeError, match="settings must be a BridgeSettings"):
        BridgeRetriever(Fixed(), settings=CoopSettings(), embed_model=Fake())
