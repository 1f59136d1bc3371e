"""A Haystack chat generator wherever an LLM is: every LLM-taking component of the package runs
with a user's own generator and with Haystack's real ``OpenAIChatGenerator`` (over a local
OpenAI-compatible fake server), accounted and JSON-parsed; ``to_dict`` round-trips the
generator without a key; ``RagMultihopChatGenerator`` lends its client; a wrong type is named
without its repr."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("haystack")

from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage, Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import llm_client
from haystack_integrations.components.generators.rag_multihop import (
    ChainAnswerGenerator,
    HaystackChatModel,
    RagMultihopChatGenerator,
)
from haystack_integrations.components.query.rag_multihop import QuestionUnroller
from haystack_integrations.components.rankers.rag_multihop import BridgeJudgeRanker
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    CoopRetriever,
)
from hs_fakes import HashingTextEmbedder, ScriptedChatGenerator

from rag_multihop.testing import (
    POLISH_WEDDING_QUESTION,
    FakeOpenAIServer,
    HashingEncoder,
    polish_wedding_passages,
    polish_wedding_reply,
)

QUESTION = POLISH_WEDDING_QUESTION
WRONG = (
    "llm must be a litellm model string or a Haystack chat generator (a component with "
    "run(messages=[ChatMessage, ...]) returning {'replies': [...]}); got "
)


def documents() -> list[Document]:
    passages = polish_wedding_passages()
    vectors = HashingEncoder().encode([p.embedding_text for p in passages])
    return [
        Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=vector.tolist())
        for p, vector in zip(passages, vectors, strict=True)
    ]


@pytest.fixture
def store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(documents())
    return store


def last_text(messages: list[dict]) -> str:
    content = messages[-1]["content"]
    if isinstance(content, list):  # OpenAI's content parts
        return " ".join(part.get("text", "") for part in content)
    return str(content)


@pytest.fixture
def openai_generator(monkeypatch: pytest.MonkeyPatch):
    """Haystack's own OpenAIChatGenerator, pointed at a local fake OpenAI server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAIServer(lambda messages: polish_wedding_reply(last_text(messages))) as server:
        yield OpenAIChatGenerator(model="gpt-4o-mini", api_base_url=server.url, max_retries=0)


def test_usage_is_read_from_the_reply_meta_or_estimated() -> None:
    generator = ScriptedChatGenerator()
    reply = llm_client(generator, None, None).complete("Plan how to answer it.")
    assert reply.model == "scripted-7b" and reply.finish_reason == "stop"
    assert reply.account.total_tokens == 110 and not reply.account.estimated
    assert generator.warm_ups == 1
    silent = llm_client(ScriptedChatGenerator(report_usage=False), None, None)
    assert silent.complete("Hello there").account.estimated
    assert asyncio.run(silent.acomplete("Hello again")).account.estimated  # run in a thread


def test_every_llm_component_runs_with_a_chat_generator(store) -> None:
    generator = ScriptedChatGenerator()
    unroller = QuestionUnroller(llm=generator)
    unrolled = unroller.run(query=QUESTION)
    assert unrolled["sub_questions"] == [
        "Who directed Polish Wedding?",
        "Where was that director born?",
    ]
    assert unrolled["trace"]["account"]["calls"] == 1
    reader = ChainAnswerGenerator(llm=generator, top_k=2)
    answered = reader.run(query=QUESTION, documents=documents(), unrolling=unrolled["unrolling"])
    assert answered["answers"][0].data == "Philadelphia"
    assert answered["trace"]["accounts"]["answer"]["prompt_tokens"] == 100

    coop = CoopRetriever(
        InMemoryEmbeddingRetriever(store), llm=generator, embedder=HashingTextEmbedder()
    )
    found = coop.run(query=QUESTION, top_k=3)
    assert found["documents"][0].id == "polish-wedding"
    assert found["trace"]["accounts"]["unroll"]["calls"] == 1

    bridge = BridgeRetriever(
        InMemoryEmbeddingRetriever(store), llm=generator, embedder=HashingTextEmbedder()
    )
    out = bridge.run(query=QUESTION, top_k=3)
    assert [d.id for d in out["documents"][:2]] == ["polish-wedding", "theresa-connelly"]
    assert out["trace"]["account"]["calls"] > 0

    ranker = BridgeJudgeRanker(llm=generator, top_k=2)
    scored = [Document(id=d.id, content=d.content, meta=d.meta, score=1.0) for d in documents()]
    ranked = asyncio.run(ranker.run_async(query=QUESTION, documents=scored))["documents"]
    assert [d.id for d in ranked] == ["polish-wedding", "theresa-connelly"]


def test_haystacks_openai_generator_drives_coop_with_its_usage(store, openai_generator) -> None:
    coop = CoopRetriever(
        InMemoryEmbeddingRetriever(store),
        llm=openai_generator,
        embedder=HashingTextEmbedder(),
        keyextract_rounds=1,
    )
    trace = coop.run(query=QUESTION, top_k=3)["trace"]
    unroll = trace["accounts"]["unroll"]
    assert (unroll["prompt_tokens"], unroll["completion_tokens"]) == (40, 9)  # the server's
    assert unroll["estimated_calls"] == 0
    again = asyncio.run(coop.run_async(query=QUESTION, top_k=3))["trace"]  # its run_async
    assert again["accounts"]["unroll"]["calls"] == 1
    reader = ChainAnswerGenerator(llm=openai_generator)
    assert reader.run(query=QUESTION, documents=documents())["answers"][0].data == "Philadelphia"


def test_a_generator_round_trips_through_to_dict_without_a_key(store, openai_generator) -> None:
    for component in (
        QuestionUnroller(llm=openai_generator),
        CoopRetriever(InMemoryEmbeddingRetriever(store), llm=openai_generator, rala=False),
        BridgeJudgeRanker(llm=openai_generator),
    ):
        data = json.loads(json.dumps(component.to_dict(), default=lambda v: v.value))
        llm = data["init_parameters"]["llm"]
        assert llm["type"].endswith("OpenAIChatGenerator")
        assert llm["init_parameters"]["api_key"]["env_vars"] == ["OPENAI_API_KEY"]
        assert "sk-test" not in json.dumps(data)
        rebuilt = type(component).from_dict(json.loads(json.dumps(data)))  # from_dict mutates
        assert type(rebuilt.llm) is type(component.llm)
        assert json.loads(json.dumps(rebuilt.to_dict(), default=lambda v: v.value)) == data


def test_rag_multihop_chat_generator_wraps_another_generator(openai_generator) -> None:
    ours = RagMultihopChatGenerator(llm=openai_generator, timeout=30, max_retries=1)
    reply = ours.run(messages=[ChatMessage.from_user("Candidate passage: Theresa Connelly is")])
    message = reply["replies"][0]
    assert message.text == '{"score": 9}'
    assert message.meta["usage"] == {"prompt_tokens": 40, "completion_tokens": 9}
    assert message.meta["model"] == "haystack/OpenAIChatGenerator/gpt-4o-mini"
    assert ours.client.settings.timeout == 30
    data = json.loads(json.dumps(ours.to_dict()))
    assert data["init_parameters"]["llm"]["type"].endswith("OpenAIChatGenerator")
    assert "sk-test" not in json.dumps(data)
    rebuilt = RagMultihopChatGenerator.from_dict(json.loads(json.dumps(data)))
    assert json.loads(json.dumps(rebuilt.to_dict())) == data
    with pytest.raises(ValueError, match="a chat generator holds its own endpoint and key"):
        RagMultihopChatGenerator(llm=openai_generator, api_base="http://localhost:1/v1")


def test_rag_multihop_chat_generator_lends_its_client() -> None:
    ours = RagMultihopChatGenerator(llm="openai/gpt-4o-mini")
    assert llm_client(ours, None, None) is ours.client
    assert QuestionUnroller(llm=ours)._ready().client is ours.client


def test_a_model_identity_and_a_bad_reply_are_named() -> None:
    assert HaystackChatModel(ScriptedChatGenerator()).model_id == (
        "haystack/ScriptedChatGenerator/scripted-7b"
    )
    assert HaystackChatModel(ScriptedChatGenerator(), model_id="mine/s").model_id == "mine/s"

    class NoReplies(ScriptedChatGenerator):
        def run(self, messages):  # type: ignore[no-untyped-def, override]
            return {"text": "hello"}

    with pytest.raises(TypeError, match=r"NoReplies.run must return \{'replies'.*keys \['text'\]"):
        llm_client(NoReplies(), None, None).complete("hi")
    with pytest.raises(ValueError, match="apply to a model-string llm"):
        QuestionUnroller(
            llm=ScriptedChatGenerator(), api_key=Secret.from_env_var("OPENAI_API_KEY")
        ).run(query=QUESTION)


class Leaky:
    """Neither a model string nor a chat generator; its repr holds a key."""

    def __repr__(self) -> str:
        return "Leaky(api_key='sk-proj-LEAKYLEAKYLEAKY')"

    def run(self, query: str) -> dict:  # a component, but not a chat generator
        return {}


@pytest.mark.parametrize(
    "build",
    [
        lambda store, llm: QuestionUnroller(llm=llm),
        lambda store, llm: ChainAnswerGenerator(llm=llm),
        lambda store, llm: CoopRetriever(InMemoryEmbeddingRetriever(store), llm=llm),
        lambda store, llm: BridgeRetriever(InMemoryEmbeddingRetriever(store), llm=llm),
        lambda store, llm: BridgeJudgeRanker(llm=llm),
        lambda store, llm: RagMultihopChatGenerator(llm=llm),
    ],
    ids=["unroller", "chain-answer", "coop", "bridge", "bridge-judge", "chat-generator"],
)
def test_a_wrong_llm_type_is_named_without_its_repr(store, build) -> None:
    with pytest.raises(TypeError) as caught:
        build(store, Leaky())
    assert str(caught.value) == WRONG + "Leaky"
