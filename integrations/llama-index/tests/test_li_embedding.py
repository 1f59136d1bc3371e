"""RagMultihopEmbedding: rag-multihop's encoder (bundled MiniLM by default) as a BaseEmbedding."""

from __future__ import annotations

import numpy as np
import pytest
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding

from rag_multihop.encoders import DEFAULT_MODEL_NAME, default_encoder

TEXTS = ["Rope is a 1948 film by Alfred Hitchcock.", "Philadelphia is a city in Pennsylvania."]


def test_default_is_the_bundled_minilm_with_the_core_vectors(minilm_embedding):
    assert minilm_embedding.model_name == DEFAULT_MODEL_NAME
    query = minilm_embedding.get_query_embedding("Who directed Rope?")
    texts = minilm_embedding.get_text_embedding_batch(TEXTS)
    assert len(query) == 384 and all(isinstance(v, float) for v in query)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(texts, default_encoder().encode(TEXTS), atol=1e-5)


def test_a_batch_is_one_encoder_call_and_equals_single_texts(hashing_encoder):
    encoder = hashing_encoder
    embed_model = RagMultihopEmbedding(encoder=encoder)
    batch = embed_model.get_text_embedding_batch(TEXTS * 3)
    assert encoder.calls == 1 and len(batch) == 6
    assert embed_model.get_text_embedding(TEXTS[1]) == batch[1]
    assert embed_model.encoder is encoder and embed_model.model_name == "hashing-test"


@pytest.mark.anyio
async def test_async_matches_sync(hashing_encoder):
    embed_model = RagMultihopEmbedding(encoder=hashing_encoder)
    assert await embed_model.aget_query_embedding("q x") == embed_model.get_query_embedding("q x")
    assert await embed_model.aget_text_embedding_batch(TEXTS) == (
        embed_model.get_text_embedding_batch(TEXTS)
    )


def test_model_name_and_a_different_encoder_are_refused(hashing_encoder):
    with pytest.raises(ValueError, match="model_name='other' but the encoder is 'hashing-test'"):
        RagMultihopEmbedding("other", encoder=hashing_encoder)


def test_round_trips_through_to_dict():
    embed_model = RagMultihopEmbedding(embed_batch_size=16)
    data = embed_model.to_dict()
    assert data["class_name"] == "RagMultihopEmbedding" and data["embed_batch_size"] == 16
    again = RagMultihopEmbedding.from_dict(data)
    assert (again.model_name, again.embed_batch_size) == (DEFAULT_MODEL_NAME, 16)


def test_is_a_settings_embed_model_for_a_vector_index(hashing_encoder):
    before = Settings._embed_model
    try:
        Settings.embed_model = RagMultihopEmbedding(encoder=hashing_encoder)
        index = VectorStoreIndex([TextNode(id_=str(i), text=t) for i, t in enumerate(TEXTS)])
        found = index.as_retriever(similarity_top_k=1).retrieve("Hitchcock film Rope")
        assert found[0].node.node_id == "0"
    finally:
        Settings._embed_model = before
