"""The Haystack text and document embedders over the bundled MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.embedders.rag_multihop import (
    RagMultihopDocumentEmbedder,
    RagMultihopTextEmbedder,
)

from rag_multihop.encoders import DEFAULT_MODEL_NAME, default_encoder

DOCS = [
    Document(id="rope", content="Rope is a 1948 film by Alfred Hitchcock.", meta={"title": "Rope"}),
    Document(id="philly", content="Philadelphia is a city in Pennsylvania."),
]


@pytest.fixture(scope="module")
def text_embedder():
    embedder = RagMultihopTextEmbedder()
    embedder.warm_up()
    return embedder


def test_text_embedder_is_the_bundled_minilm(text_embedder):
    vector = text_embedder.run(text="Who directed Rope?")["embedding"]
    assert len(vector) == 384 and all(type(v) is float for v in vector)
    np.testing.assert_allclose(
        vector, default_encoder().encode(["Who directed Rope?"])[0], atol=1e-5
    )
    assert text_embedder.encoder.name == DEFAULT_MODEL_NAME


def test_document_embedder_embeds_meta_fields_then_content_and_leaves_inputs_alone(
    text_embedder,
):
    embedder = RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"], prefix="p: ")
    out = embedder.run(documents=DOCS)["documents"]
    assert [d.id for d in out] == ["rope", "philly"] and out[0].meta == {"title": "Rope"}
    expected = text_embedder.run(text="p: Rope\nRope is a 1948 film by Alfred Hitchcock.")
    np.testing.assert_allclose(out[0].embedding, expected["embedding"], atol=1e-5)
    assert all(d.embedding is None for d in DOCS)


def test_bad_inputs_name_the_other_embedder():
    with pytest.raises(TypeError, match="use RagMultihopDocumentEmbedder"):
        RagMultihopTextEmbedder().run(text=DOCS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="use RagMultihopTextEmbedder"):
        RagMultihopDocumentEmbedder().run(documents="a text")  # type: ignore[arg-type]
    assert RagMultihopDocumentEmbedder().run(documents=[]) == {"documents": []}
    with pytest.raises(ValueError, match="batch_size"):
        RagMultihopTextEmbedder(batch_size=0)


def test_round_trip_through_to_dict():
    for embedder in (
        RagMultihopTextEmbedder(suffix="!"),
        RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"], batch_size=8),
    ):
        data = embedder.to_dict()
        assert type(embedder).from_dict(data).to_dict() == data


@pytest.mark.anyio
async def test_async_matches_sync(text_embedder):
    docs = RagMultihopDocumentEmbedder()
    assert await text_embedder.run_async(text="q x") == text_embedder.run(text="q x")
    assert (await docs.run_async(documents=DOCS))["documents"] == docs.run(documents=DOCS)[
        "documents"
    ]


def test_index_and_query_pipelines(text_embedder):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    indexing = Pipeline()
    indexing.add_component("embedder", RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"]))
    indexing.add_component("writer", DocumentWriter(store))
    indexing.connect("embedder.documents", "writer.documents")
    indexing.run({"embedder": {"documents": DOCS}})
    query = Pipeline()
    query.add_component("text_embedder", text_embedder)
    query.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=1))
    query.connect("text_embedder.embedding", "retriever.query_embedding")
    out = query.run({"text_embedder": {"text": "Which Hitchcock film?"}})
    assert [d.id for d in out["retriever"]["documents"]] == ["rope"]
