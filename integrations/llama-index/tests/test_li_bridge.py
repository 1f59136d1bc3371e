"""BridgeRAG's LlamaIndex adapters: a retriever around a real VectorStoreIndex retriever and a
judge postprocessor; translation only, sync = async, nodes never mutated, no key serialised."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.postprocessor.rag_multihop import BridgeJudgeRerank
from llama_index.retrievers.rag_multihop import SIGNALS_KEY, BridgeRetriever
from llama_index.retrievers.rag_multihop.bridge import NodeSearcher, judge_encoder

from rag_multihop.encoders import SentenceTransformerEncoder
from rag_multihop.llm import LLMClient, LLMSettings, RawReply
from rag_multihop.testing import (
    POLISH_WEDDING_QUESTION,
    FakeTransport,
    polish_wedding_passages,
    polish_wedding_replies,
)
from rag_multihop.types import Passage, Query

PASSAGES = [
    *polish_wedding_passages(),
    Passage(
        "hitchcock", "Alfred Hitchcock was an English film director.", title="Alfred Hitchcock"
    ),
]
QUESTION = POLISH_WEDDING_QUESTION


def text_nodes() -> list[TextNode]:
    return [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in PASSAGES]


@pytest.fixture
def base():
    index = VectorStoreIndex(text_nodes(), embed_model=HashingEmbedding())
    return index.as_retriever(similarity_top_k=10)


def test_retriever_llm_free_finds_the_second_hop(base) -> None:
    bridge = BridgeRetriever(base, similarity_top_k=4, embed_model=HashingEmbedding())
    found = bridge.retrieve(QUESTION)
    assert [n.node.node_id for n in found[:2]] == ["polish-wedding", "theresa-connelly"]
    assert len(found) == 4
    signals = found[1].node.metadata[SIGNALS_KEY]
    assert {"judge", "fused", "retrieval"} <= set(signals)
    assert SIGNALS_KEY in found[1].node.excluded_llm_metadata_keys
    assert found[1].node.metadata["title"] == "Theresa Connelly"
    again = base.retrieve(QUESTION)  # the wrapped retriever's nodes carry no signals
    assert all(SIGNALS_KEY not in n.node.metadata for n in again)


def test_retriever_async_matches_sync(base) -> None:
    bridge = BridgeRetriever(base, similarity_top_k=4, embed_model=HashingEmbedding())
    sync = [(n.node.node_id, n.score) for n in bridge.retrieve(QUESTION)]
    async_ = asyncio.run(bridge.aretrieve(QueryBundle(QUESTION)))
    assert [(n.node.node_id, n.score) for n in async_] == sync


class CountingEmbedding(HashingEmbedding):
    """Counts query embeddings and text batches; ``query_prefix`` makes queries embed
    differently from texts (as instruction-tuned models do)."""

    query_prefix: str = ""
    queries: int = 0
    batches: int = 0

    def _get_query_embedding(self, query: str) -> list[float]:
        self.queries += 1
        return super()._get_query_embedding(self.query_prefix + query)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.batches += 1
        return [self._get_text_embedding(t) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)


def bridge_over(embed_model, *, batched: bool = True) -> BridgeRetriever:
    vector_retriever = VectorStoreIndex(text_nodes(), embed_model=embed_model).as_retriever(
        similarity_top_k=10
    )
    bridge = BridgeRetriever(vector_retriever, similarity_top_k=4, embed_model=HashingEmbedding())
    if not batched:  # the retriever embeds each search text itself
        bridge.core.searcher = NodeSearcher(vector_retriever)
    return bridge


def test_each_search_step_embeds_its_texts_in_one_batch_with_the_indexs_model() -> None:
    embed_model = CountingEmbedding()
    bridge = bridge_over(embed_model)
    expected = [
        (n.node.node_id, n.score)
        for n in bridge_over(HashingEmbedding(), batched=False).retrieve(QUESTION)
    ]
    embed_model.queries = embed_model.batches = 0
    assert [(n.node.node_id, n.score) for n in bridge.retrieve(QUESTION)] == expected
    assert (embed_model.queries, embed_model.batches) == (1, 2)  # the check, hop 1, expansion
    again = asyncio.run(bridge.aretrieve(QueryBundle(QUESTION)))
    assert [(n.node.node_id, n.score) for n in again] == expected
    assert (embed_model.queries, embed_model.batches) == (1, 4)


def test_a_model_that_embeds_queries_differently_embeds_each_query_as_a_query() -> None:
    embed_model = CountingEmbedding(query_prefix="represent the question ")
    expected = bridge_over(embed_model, batched=False).retrieve(QUESTION)
    bridge = bridge_over(embed_model)
    assert bridge.core.searcher.search([], k=3) == [] and bridge.core.searcher._batches is None
    trace = bridge.core.run(Query(QUESTION), 4).trace
    embed_model.queries = embed_model.batches = 0
    found = bridge.retrieve(QUESTION)
    assert [(n.node.node_id, n.score) for n in found] == [
        (n.node.node_id, n.score) for n in expected
    ]
    assert bridge.core.searcher._batches is False and embed_model.batches == 0
    assert embed_model.queries == 1 + len(trace.queries) + len(trace.entities)  # one per text


def fake_llm() -> FakeTransport:
    """Judge 9 for the director's page, 2 otherwise; fixed entities and queries."""
    return FakeTransport(
        polish_wedding_replies(
            entities=RawReply('{"e1": "Theresa Connelly", "e2": ""}', prompt_tokens=50),
            queries=RawReply('{"queries": ["Theresa Connelly born in"]}', prompt_tokens=50),
        )
    )


def test_retriever_llm_mode_with_a_client(base) -> None:
    client = LLMClient(LLMSettings("openai/gpt-4o-mini"), transport=fake_llm())
    bridge = BridgeRetriever(base, similarity_top_k=3, llm=client)
    found = asyncio.run(bridge.aretrieve(QUESTION))
    assert [n.node.node_id for n in found[:2]] == ["polish-wedding", "theresa-connelly"]
    assert found[1].node.metadata[SIGNALS_KEY]["judge"] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="apply to a model-string llm"):
        BridgeRetriever(base, llm=client, api_key_env="OPENAI_API_KEY")


def scored_nodes() -> list[NodeWithScore]:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    return [NodeWithScore(node=n, score=s) for n, s in zip(text_nodes(), scores, strict=True)]


def test_postprocessor_judges_against_the_top_node() -> None:
    rerank = BridgeJudgeRerank(top_n=3, embed_model=HashingEmbedding())
    nodes = scored_nodes()
    before = [(n.score, dict(n.node.metadata)) for n in nodes]
    out = rerank.postprocess_nodes(nodes, query_str=QUESTION)
    assert [n.node.node_id for n in out[:2]] == ["polish-wedding", "theresa-connelly"]
    assert len(out) == 3
    assert [(n.score, dict(n.node.metadata)) for n in nodes] == before  # inputs untouched
    async_ = asyncio.run(rerank.apostprocess_nodes(nodes, query_str=QUESTION))
    assert [n.node.node_id for n in async_] == [n.node.node_id for n in out]
    assert rerank.postprocess_nodes([], query_str=QUESTION) == []
    with pytest.raises(ValueError, match="Missing query bundle"):
        rerank.postprocess_nodes(nodes)


def test_postprocessor_serialises_settings_never_a_key() -> None:
    rerank = BridgeJudgeRerank(top_n=2, llm="openai/gpt-4o-mini", api_key_env="TEAM_KEY")
    data = rerank.to_dict()
    assert data["llm"] == "openai/gpt-4o-mini" and data["api_key_env"] == "TEAM_KEY"
    assert "embed_model" not in data and data["class_name"] == "BridgeJudgeRerank"
    with pytest.raises(ValueError, match="bridge_position must be one of"):
        BridgeJudgeRerank(bridge_position="last")


def test_default_judge_encoder_is_the_bundled_minilm_loaded_lazily() -> None:
    encoder = judge_encoder(None)
    assert isinstance(encoder, SentenceTransformerEncoder) and encoder._model is None


def test_an_unset_settings_embed_model_falls_back_to_minilm_not_to_its_lazy_default(
    unset_settings_embed_model,
) -> None:
    encoder = judge_encoder(None)
    assert isinstance(encoder, SentenceTransformerEncoder)
    assert unset_settings_embed_model.calls == []  # OpenAIEmbedding was never built


def test_the_judge_falls_back_to_settings_embed_model(settings_embed_model) -> None:
    encoder = judge_encoder(None)
    assert encoder.name == settings_embed_model.model_name and encoder.dim == 64  # not MiniLM
