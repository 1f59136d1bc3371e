"""CoopRAG's Haystack components: the RaLa ranker, the question unroller, the chain answer
generator and the UAR + RaLa + KeyExtract retriever; run = run_async, a pipeline, exact
to_dict/from_dict with env-var secrets only. The LLM is a plain-object fake transport."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.generators.rag_multihop import ChainAnswerGenerator
from haystack_integrations.components.query.rag_multihop import QuestionUnroller
from haystack_integrations.components.rankers.rag_multihop import RaLaRanker
from haystack_integrations.components.retrievers.rag_multihop import CoopRetriever
from hs_fakes import HashingTextEmbedder

from rag_multihop.llm import RawReply
from rag_multihop.testing import (
    POLISH_WEDDING_CHAIN,
    POLISH_WEDDING_QUESTION,
    POLISH_WEDDING_UNROLLING,
    FakeTransport,
    HashingEncoder,
    polish_wedding_passages,
    polish_wedding_replies,
)

PASSAGES = polish_wedding_passages()
QUESTION = POLISH_WEDDING_QUESTION


def fake_llm() -> FakeTransport:
    """Scripted CoopRAG replies by prompt kind (stands in for litellm's transport)."""
    return FakeTransport(
        polish_wedding_replies(
            unroll=RawReply(
                json.dumps(POLISH_WEDDING_UNROLLING), prompt_tokens=80, completion_tokens=40
            ),
            complete=RawReply(
                json.dumps(POLISH_WEDDING_CHAIN), prompt_tokens=200, completion_tokens=40
            ),
            key=RawReply('{"answerable": false, "key_sentence": ""}', prompt_tokens=150),
        ),
        default=RawReply('{"answer": "Philadelphia"}', prompt_tokens=200, completion_tokens=5),
    )


@pytest.fixture(autouse=True)
def fake_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    import rag_multihop.llm.client as client

    monkeypatch.setattr(client, "default_transport", lambda model: fake_llm())


def documents() -> list[Document]:
    vectors = HashingEncoder().encode([p.embedding_text for p in PASSAGES])
    return [
        Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=vector.tolist())
        for p, vector in zip(PASSAGES, vectors, strict=True)
    ]


def plain(data: dict) -> dict:
    """``data`` as JSON would carry it (enums by value)."""
    return json.loads(json.dumps(data, default=lambda value: value.value))


@pytest.fixture
def store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(documents())
    return store


def test_rala_ranker_reranks_new_documents_and_round_trips() -> None:
    docs = [Document(id=d.id, content=d.content, meta=d.meta, score=0.1) for d in documents()]
    ranker = RaLaRanker(top_k=3)
    out = ranker.run(query=QUESTION, documents=docs[::-1])["documents"]
    assert out[0].id == "polish-wedding" and len(out) == 3
    assert {"rala", "maxsim"} <= set(out[0].meta[SIGNALS_KEY])
    assert all(d.score == 0.1 and SIGNALS_KEY not in d.meta for d in docs)
    again = asyncio.run(ranker.run_async(query=QUESTION, documents=docs[::-1], top_k=2))
    assert [d.id for d in again["documents"]] == [d.id for d in out[:2]]
    assert ranker.run(query=QUESTION, documents=[]) == {"documents": []}
    assert RaLaRanker.from_dict(ranker.to_dict()).to_dict() == ranker.to_dict()
    with pytest.raises(ValueError, match="token_weighting must be one of"):
        RaLaRanker(token_weighting="bm25")


def test_unroller_and_answer_generator() -> None:
    unroller = QuestionUnroller(llm="openai/gpt-4o-mini")
    out = unroller.run(query=QUESTION)
    assert out["query"].startswith(QUESTION + " Who directed Polish Wedding?")
    assert out["sub_questions"] == POLISH_WEDDING_UNROLLING["sub_questions"]
    assert out["trace"]["account"]["calls"] == 1
    assert asyncio.run(unroller.run_async(query=QUESTION))["query"] == out["query"]

    generator = ChainAnswerGenerator(llm="openai/gpt-4o-mini", top_k=2)
    answered = generator.run(query=QUESTION, documents=documents(), unrolling=out["unrolling"])
    answer = answered["answers"][0]
    assert answer.data == "Philadelphia" and len(answer.documents) == 2
    assert answer.meta["chain"][1] == ["Theresa Connelly", "born in", "Philadelphia"]
    assert answer.meta["unsupported_spans"] == []
    assert set(answered["trace"]["accounts"]) == {"complete", "answer"}
    plain = asyncio.run(generator.run_async(query=QUESTION, documents=documents()))
    assert set(plain["trace"]["accounts"]) == {"answer"}  # no unrolling: no completion call
    with pytest.raises(ValueError, match="at least one document"):
        generator.run(query=QUESTION, documents=[])


def test_retriever_llm_free_and_with_keyextract(store: InMemoryDocumentStore) -> None:
    free = CoopRetriever(InMemoryEmbeddingRetriever(store), embedder=HashingTextEmbedder())
    out = free.run(query=QUESTION, top_k=3)
    assert out["documents"][0].id == "polish-wedding" and len(out["documents"]) == 3
    assert out["unrolling"]["sub_questions"] == [] and out["trace"]["accounts"] == {}

    keyed = CoopRetriever(
        InMemoryEmbeddingRetriever(store),
        llm="openai/gpt-4o-mini",
        embedder=HashingTextEmbedder(),
        keyextract_rounds=2,
        reader_top_k=3,
    )
    result = keyed.run(query=QUESTION, top_k=3)
    trace = result["trace"]
    assert trace["stop"] == "no new sentence"  # the judge never says answerable nor extracts
    assert set(trace["accounts"]) == {"unroll", "keyextract_1"}
    async_ = asyncio.run(keyed.run_async(query=QUESTION, top_k=3))
    assert [d.id for d in async_["documents"]] == [d.id for d in result["documents"]]


def test_pipeline_and_serialisation(
    store: InMemoryDocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-test-not-a-real-key")  # read at call time
    key = Secret.from_env_var("TEAM_OPENAI_KEY", strict=False)
    pipeline = Pipeline()
    pipeline.add_component(
        "retriever",
        CoopRetriever(
            InMemoryEmbeddingRetriever(store),
            llm="openai/gpt-4o-mini",
            api_key=key,
            embedder=HashingTextEmbedder(),
            top_k=3,
        ),
    )
    pipeline.add_component("reader", ChainAnswerGenerator(llm="openai/gpt-4o-mini", api_key=key))
    pipeline.connect("retriever.documents", "reader.documents")
    pipeline.connect("retriever.unrolling", "reader.unrolling")
    out = pipeline.run({"retriever": {"query": QUESTION}, "reader": {"query": QUESTION}})
    assert out["reader"]["answers"][0].data == "Philadelphia"
    params = pipeline.to_dict()["components"]["retriever"]["init_parameters"]
    assert params["api_key"]["env_vars"] == ["TEAM_OPENAI_KEY"]
    for component in (
        CoopRetriever(InMemoryEmbeddingRetriever(store), llm="local", keyextract_rounds=2),
        QuestionUnroller(llm="openai/gpt-4o-mini", api_key=key),
        ChainAnswerGenerator(llm="openai/gpt-4o-mini", top_k=3),
    ):
        data = plain(component.to_dict())
        assert plain(type(component).from_dict(plain(data)).to_dict()) == data
        assert "sk-" not in json.dumps(data)
    with pytest.raises(ValueError, match="Secret.from_env_var"):
        QuestionUnroller(llm="openai/gpt-4o-mini", api_key=Secret.from_token("sk-test"))
    with pytest.raises(TypeError, match="embedding retriever component"):
        CoopRetriever(object())
    with pytest.raises(TypeError, match="got InMemoryBM25Retriever, which has no run"):
        CoopRetriever(InMemoryBM25Retriever(store))
    for filters in (None, {"field": "id", "operator": "!=", "value": "rope"}):
        retriever = InMemoryEmbeddingRetriever(store)
        coop = CoopRetriever(retriever, reader_top_k=2, filters=filters, filter_policy="merge")
        data = plain(coop.to_dict())
        assert plain(CoopRetriever.from_dict(plain(data)).to_dict()) == data
        assert data["init_parameters"]["reader_top_k"] == 2


def test_retriever_filters_every_search(store: InMemoryDocumentStore) -> None:
    not_polish = {"field": "id", "operator": "!=", "value": "polish-wedding"}
    coop = CoopRetriever(
        InMemoryEmbeddingRetriever(store), embedder=HashingTextEmbedder(), rala=False
    )
    assert coop.run(query=QUESTION, top_k=5)["documents"][0].id == "polish-wedding"
    ids = [d.id for d in coop.run(query=QUESTION, top_k=5, filters=not_polish)["documents"]]
    assert len(ids) == 4 and "polish-wedding" not in ids
    at_init = CoopRetriever(
        InMemoryEmbeddingRetriever(store),
        embedder=HashingTextEmbedder(),
        rala=False,
        filters=not_polish,
    )
    found = asyncio.run(at_init.run_async(query=QUESTION, top_k=5))["documents"]
    assert [d.id for d in found] == ids


def test_rala_ranker_reads_the_token_states_of_a_corpus_index(tmp_path) -> None:
    from rag_multihop.coop import RaLaReranker
    from rag_multihop.coop.indexed import RaLaSidecar
    from rag_multihop.store import CorpusIndex

    docs = [Document(id=d.id, content=d.content, meta=d.meta, score=0.1) for d in documents()]
    plain_ranker = RaLaRanker(top_k=3)
    expected = plain_ranker.run(query=QUESTION, documents=docs)["documents"]
    index = CorpusIndex.build(
        tmp_path / "idx", PASSAGES, HashingEncoder().encode([p.embedding_text for p in PASSAGES])
    )
    index.attach_sidecar(RaLaSidecar(RaLaReranker(plain_ranker._ready().encoder)))
    ranker = RaLaRanker(top_k=3, index_path=str(tmp_path / "idx"))
    found = ranker.run(query=QUESTION, documents=docs)["documents"]
    assert [d.id for d in found] == [d.id for d in expected]
    assert [d.score for d in found] == pytest.approx([d.score for d in expected], abs=1e-3)
    assert ranker._ready().encoded_at_query_time == 0  # every document's states were stored
    assert RaLaRanker.from_dict(ranker.to_dict()).index_path == str(tmp_path / "idx")
