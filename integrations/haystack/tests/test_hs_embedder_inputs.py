"""Every component that embeds takes a Haystack embedder component (the pipeline's own) or a
model name; the BridgeRetriever passes filters through to the store."""

from __future__ import annotations

import asyncio

import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.errors import FilterError
from haystack_integrations.common.rag_multihop.convert import as_encoder
from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
from haystack_integrations.components.rankers.rag_multihop import (
    AssociationRanker,
    BridgeJudgeRanker,
)
from haystack_integrations.components.retrievers.rag_multihop import BridgeRetriever
from hs_fakes import HashingDocumentEmbedder, HashingTextEmbedder

from rag_multihop.association import AssociationReranker, TrainingConfig
from rag_multihop.testing import hashing_vectors

DOCS = {
    "polish-wedding": ("Polish Wedding", "Polish Wedding is a film directed by Theresa Connelly."),
    "theresa-connelly": ("Theresa Connelly", "Theresa Connelly was born in Philadelphia."),
    "philadelphia": ("Philadelphia", "Philadelphia is a city in Pennsylvania."),
    "rope": ("Rope", "Rope is a 1948 film directed by Alfred Hitchcock."),
}
QUESTION = "Where was the director of the film Polish Wedding born?"


def documents(category: str = "film") -> list[Document]:
    texts = [f"{title}\n{text}" for title, text in DOCS.values()]
    return [
        Document(
            id=doc_id,
            content=text,
            meta={"title": title, "category": category},
            embedding=vector.tolist(),
        )
        for (doc_id, (title, text)), vector in zip(
            DOCS.items(), hashing_vectors(texts), strict=True
        )
    ]


@pytest.fixture
def store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(documents())
    return store


def test_a_user_text_or_document_embedder_becomes_the_encoder():
    text, docs = HashingTextEmbedder(), HashingDocumentEmbedder()
    assert as_encoder(text).encode(["a b", "c"]).shape == (2, 64) and text.runs == 2
    assert as_encoder(docs).encode(["a b", "c"]).shape == (2, 64) and docs.runs == 1  # one batch
    ours = RagMultihopTextEmbedder()
    assert as_encoder(ours) is ours.encoder  # the pipeline's own model, loaded once
    with pytest.raises(TypeError, match="Haystack text or document embedder component"):
        BridgeJudgeRanker(embedder=object())


def test_bridge_components_embed_with_the_given_embedder(store):
    embedder = HashingDocumentEmbedder()
    bridge = BridgeRetriever(InMemoryEmbeddingRetriever(store), top_k=3, embedder=embedder)
    found = bridge.run(query=QUESTION)["documents"]
    assert [d.id for d in found[:2]] == ["polish-wedding", "theresa-connelly"]
    assert embedder.runs >= 2  # hop 1, then the expansion searches in one batch
    judge = BridgeJudgeRanker(top_k=2, embedder=HashingTextEmbedder())
    ranked = judge.run(query=QUESTION, documents=found)["documents"]
    assert [d.id for d in ranked] == ["polish-wedding", "theresa-connelly"]


def test_association_ranker_embeds_with_the_given_embedder(tmp_path):
    texts = [f"{title}\n{text}" for title, text in DOCS.values()]
    config = TrainingConfig(epochs=5, batch_size=4, seed=0)
    model = AssociationReranker(training=config).fit(
        list(DOCS),
        hashing_vectors(texts),
        [("polish-wedding", "theresa-connelly")],
        encoder_name="HashingTextEmbedder",
    )
    path = str(model.save(tmp_path / "aar"))
    embedder = HashingTextEmbedder()
    ranker = AssociationRanker(path, top_k=2, embedder=embedder)
    out = ranker.run(query=QUESTION, documents=[*documents(), Document(id="new", content="x y")])
    assert len(out["documents"]) == 2 and embedder.runs >= 2  # the query and the unknown doc


def test_serialises_a_model_name_or_the_embedder_component(store):
    by_name = BridgeRetriever(InMemoryEmbeddingRetriever(store), embedder="models/other")
    assert by_name.to_dict()["init_parameters"]["embedder"] == "models/other"
    component = BridgeJudgeRanker(embedder=RagMultihopTextEmbedder(prefix="q: "))
    data = component.to_dict()
    assert data["init_parameters"]["embedder"]["init_parameters"]["prefix"] == "q: "
    again = BridgeJudgeRanker.from_dict(data)
    assert isinstance(again.embedder, RagMultihopTextEmbedder) and again.to_dict() == data


def test_filters_reach_every_search_sync_and_async():
    store = InMemoryDocumentStore()
    store.write_documents(documents("film"))
    other = [
        Document(
            id=f"other-{d.id}",
            content=d.content,
            meta={**d.meta, "category": "other"},
            embedding=d.embedding,
        )
        for d in documents()
    ]
    store.write_documents(other)
    only_films = {"field": "meta.category", "operator": "==", "value": "film"}
    bridge = BridgeRetriever(
        InMemoryEmbeddingRetriever(store),
        top_k=6,
        embedder=HashingTextEmbedder(),
        filters=only_films,
    )
    assert all(not d.id.startswith("other-") for d in bridge.run(query=QUESTION)["documents"])
    others = {"field": "meta.category", "operator": "==", "value": "other"}
    found = asyncio.run(bridge.run_async(query=QUESTION, filters=others))["documents"]
    assert found and all(d.id.startswith("other-") for d in found)
    assert bridge.to_dict()["init_parameters"]["filters"] == only_films
    nothing = {"field": "meta.category", "operator": "==", "value": "none"}
    assert bridge.run(query=QUESTION, filters=nothing)["documents"] == []
    merging = BridgeRetriever(
        InMemoryEmbeddingRetriever(store),
        embedder=HashingTextEmbedder(),
        filters=only_films,
        filter_policy="merge",
    )
    rope = {"field": "meta.title", "operator": "==", "value": "Rope"}
    found = merging.run(query=QUESTION, filters=rope)["documents"]
    assert [d.id for d in found] == ["rope"]  # films AND Rope: other-rope is not a film
    serialised = BridgeRetriever(InMemoryEmbeddingRetriever(store), filter_policy="merge")
    data = serialised.to_dict()
    assert data["init_parameters"]["filter_policy"] == "merge"
    assert BridgeRetriever.from_dict(serialised.to_dict()).to_dict() == data


def test_malformed_filters_fail_with_a_clear_error():
    retriever = InMemoryEmbeddingRetriever(InMemoryDocumentStore())
    wrong_operator = {"field": "meta.category", "operator": "equals", "value": "film"}
    with pytest.raises(FilterError, match="unknown comparison operator 'equals'.*valid: !="):
        BridgeRetriever(retriever, filters=wrong_operator)
    bridge = BridgeRetriever(retriever, embedder=HashingTextEmbedder())
    no_list = {"field": "meta.category", "operator": "in", "value": "film"}
    with pytest.raises(FilterError, match="operator 'in' needs a list value"):
        bridge.run(query=QUESTION, filters=no_list)
    no_conditions = {"operator": "AND", "conditions": {"field": "meta.category"}}
    with pytest.raises(FilterError, match="'conditions' of .* must be a list"):
        asyncio.run(bridge.run_async(query=QUESTION, filters=no_conditions))
    with pytest.raises(ValueError, match="Unknown FilterPolicy type 'both'"):
        BridgeRetriever(retriever, filter_policy="both")
