"""BridgeRAG's Haystack components: a retriever around InMemoryEmbeddingRetriever and a judge
ranker; run = run_async, pipelines, exact to_dict/from_dict with env-var secrets only."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY, key_variable
from haystack_integrations.components.rankers.rag_multihop import BridgeJudgeRanker
from haystack_integrations.components.retrievers.rag_multihop import BridgeRetriever

from rag_multihop import Passage
from rag_multihop.llm import LLMConfigError
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

PASSAGES = [
    *polish_wedding_passages(),
    Passage(
        "hitchcock", "Alfred Hitchcock was an English film director.", title="Alfred Hitchcock"
    ),
]
QUESTION = POLISH_WEDDING_QUESTION


@pytest.fixture(autouse=True)
def hashing_encoder_for_components(monkeypatch: pytest.MonkeyPatch) -> None:
    """The components' encoder loader returns the tests' hashing encoder (no model load)."""
    import rag_multihop.encoders.sentence_transformer as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda **_: HashingEncoder())


def documents() -> list[Document]:
    vectors = HashingEncoder().encode([p.embedding_text for p in PASSAGES])
    return [
        Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=vector.tolist())
        for p, vector in zip(PASSAGES, vectors, strict=True)
    ]


@pytest.fixture
def store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(documents())
    return store


def test_retriever_runs_sync_and_async_alike(store: InMemoryDocumentStore) -> None:
    bridge = BridgeRetriever(InMemoryEmbeddingRetriever(store), top_k=4)
    bridge.warm_up()
    out = bridge.run(query=QUESTION)
    ids = [d.id for d in out["documents"]]
    assert ids[:2] == ["polish-wedding", "theresa-connelly"] and len(ids) == 4
    assert {"judge", "fused"} <= set(out["documents"][1].meta[SIGNALS_KEY])
    assert out["trace"]["bridge_id"] == "polish-wedding" and out["trace"]["account"] is None
    async_ = asyncio.run(bridge.run_async(query=QUESTION))
    assert [(d.id, d.score) for d in async_["documents"]] == [
        (d.id, d.score) for d in out["documents"]
    ]
    assert len(bridge.run(query=QUESTION, top_k=2)["documents"]) == 2
    stored = store.filter_documents()
    assert all(SIGNALS_KEY not in d.meta for d in stored)  # store documents untouched


def test_retriever_then_judge_ranker_in_a_pipeline(store: InMemoryDocumentStore) -> None:
    pipeline = Pipeline()
    pipeline.add_component("bridge", BridgeRetriever(InMemoryEmbeddingRetriever(store), top_k=5))
    pipeline.add_component("judge", BridgeJudgeRanker(top_k=3))
    pipeline.connect("bridge.documents", "judge.documents")
    out = pipeline.run({"bridge": {"query": QUESTION}, "judge": {"query": QUESTION}})
    assert [d.id for d in out["judge"]["documents"]][:2] == ["polish-wedding", "theresa-connelly"]
    restored = Pipeline.loads(pipeline.dumps())
    assert restored.to_dict() == pipeline.to_dict()


def test_serialisation_round_trips_exactly_and_stores_only_the_variable_name(
    store: InMemoryDocumentStore,
) -> None:
    key = Secret.from_env_var(["TEAM_OPENAI_KEY", "OPENAI_API_KEY"], strict=False)
    bridge = BridgeRetriever(
        InMemoryEmbeddingRetriever(store), llm="openai/gpt-4o-mini", api_key=key, alpha=0.15
    )
    data = bridge.to_dict()
    assert data["init_parameters"]["api_key"] == {
        "type": "env_var",
        "env_vars": ["TEAM_OPENAI_KEY", "OPENAI_API_KEY"],
        "strict": False,
    }
    assert BridgeRetriever.from_dict(bridge.to_dict()).to_dict() == data
    ranker = BridgeJudgeRanker(llm="openai/gpt-4o-mini", api_key=key, top_k=4)
    assert BridgeJudgeRanker.from_dict(ranker.to_dict()).to_dict() == ranker.to_dict()


def test_token_secrets_and_bad_settings_are_refused(store: InMemoryDocumentStore) -> None:
    retriever = InMemoryEmbeddingRetriever(store)
    with pytest.raises(ValueError, match="api_key must be Secret.from_env_var"):
        BridgeRetriever(retriever, api_key=Secret.from_token("sk-secret"))
    with pytest.raises(ValueError, match="api_key must be Secret.from_env_var"):
        BridgeJudgeRanker(api_key=Secret.from_token("sk-secret"))
    with pytest.raises(TypeError, match="embedding retriever component"):
        BridgeRetriever(object())
    with pytest.raises(TypeError, match="got InMemoryBM25Retriever, which has no run"):
        BridgeRetriever(InMemoryBM25Retriever(store))
    with pytest.raises(ValueError, match="bridge_position must be one of"):
        BridgeJudgeRanker(bridge_position="last")
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        BridgeRetriever(retriever, top_k=0)


def test_key_variable_prefers_the_first_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    key = Secret.from_env_var(["RAG_MH_A", "RAG_MH_B"], strict=False)
    monkeypatch.delenv("RAG_MH_A", raising=False)
    monkeypatch.delenv("RAG_MH_B", raising=False)
    assert key_variable(key) == "RAG_MH_A" and key_variable(None) is None
    monkeypatch.setenv("RAG_MH_B", "x")
    assert key_variable(key) == "RAG_MH_B"


def test_missing_key_in_llm_mode_names_the_variable(
    store: InMemoryDocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_MH_NO_SUCH_KEY", raising=False)
    bridge = BridgeRetriever(
        InMemoryEmbeddingRetriever(store),
        llm="openai/gpt-4o-mini",
        api_key=Secret.from_env_var("RAG_MH_NO_SUCH_KEY", strict=False),
    )
    with pytest.raises(LLMConfigError, match="RAG_MH_NO_SUCH_KEY"):
        bridge.run(query=QUESTION)


def test_ranker_edge_cases() -> None:
    ranker = BridgeJudgeRanker(top_k=2)
    assert ranker.run(query=QUESTION, documents=[]) == {"documents": []}
    docs = documents()[:3]
    scored = [
        Document(id=d.id, content=d.content, meta=d.meta, score=s)
        for d, s in zip(docs, [0.9, 0.1, 0.5], strict=True)
    ]
    out = ranker.run(query=QUESTION, documents=scored)["documents"]
    assert out[0].id == "polish-wedding" and len(out) == 2
    assert [d.score for d in scored] == [0.9, 0.1, 0.5]
    async_ = asyncio.run(ranker.run_async(query=QUESTION, documents=scored))
    assert [d.id for d in async_["documents"]] == [d.id for d in out]


class SyncOnlyRetriever:
    """An embedding retriever with ``run`` only (no ``run_async``)."""

    def __init__(self, inner: InMemoryEmbeddingRetriever) -> None:
        self.inner = inner

    def run(self, query_embedding: list[float], top_k: int | None = None) -> dict:
        return self.inner.run(query_embedding=query_embedding, top_k=top_k)


def test_async_run_over_a_sync_only_retriever(store: InMemoryDocumentStore) -> None:
    bridge = BridgeRetriever(SyncOnlyRetriever(InMemoryEmbeddingRetriever(store)), top_k=4)
    sync = [d.id for d in bridge.run(query=QUESTION)["documents"]]
    async_ = asyncio.run(bridge.run_async(query=QUESTION))
    assert [d.id for d in async_["documents"]] == sync
