"""A LlamaIndex ``LLM`` object wherever an LLM is: every LLM-taking component of the package
runs with a user's own ``CustomLLM`` (accounted, JSON parsed), ``RagMultihopLLM`` lends its
client, and a wrong type is named without its repr."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding, ScriptedLLM
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.llms.rag_multihop import LlamaIndexChatModel, RagMultihopLLM, as_llm_client
from llama_index.postprocessor.rag_multihop import BridgeJudgeRerank
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    BridgeRetriever,
    CoopQueryEngine,
    CoopRetriever,
    UnrollingQueryTransform,
)

from rag_multihop.llm import LLMClient
from rag_multihop.testing import POLISH_WEDDING_QUESTION, FakeTransport, polish_wedding_passages

QUESTION = POLISH_WEDDING_QUESTION
WRONG = "llm must be a litellm model string, LLMSettings, LLMClient, or a LlamaIndex LLM; got "


def text_nodes() -> list[TextNode]:
    return [
        TextNode(id_=p.id, text=p.text, metadata={"title": p.title})
        for p in polish_wedding_passages()
    ]


@pytest.fixture
def base():
    index = VectorStoreIndex(text_nodes(), embed_model=HashingEmbedding())
    return index.as_retriever(similarity_top_k=10)


def test_usage_is_read_from_the_response_or_estimated() -> None:
    reported = as_llm_client(ScriptedLLM()).complete("Plan how to answer it.")
    assert reported.model == "scripted-7b" and reported.finish_reason == "stop"
    assert reported.account.total_tokens == 110 and not reported.account.estimated
    silent = as_llm_client(ScriptedLLM(report_usage=False)).complete("Hello there")
    assert silent.account.estimated and silent.account.calls == 1
    mock = as_llm_client(MockLLM(max_tokens=3))
    assert mock.settings.model == "llama_index/MockLLM/unknown"
    assert mock.complete("hi").text == "text text text"


def test_the_coop_retriever_and_query_engine_run_with_a_llama_index_llm(base) -> None:
    llm = ScriptedLLM()
    coop = CoopRetriever(base, llm=llm, similarity_top_k=3, keyextract_rounds=1)
    nodes = coop.retrieve(QUESTION)
    trace = coop.last_trace
    assert nodes[0].node.node_id == "polish-wedding" and trace is not None
    assert trace.account is not None and trace.account.calls == 2  # unroll + one KeyExtract
    assert trace.account.total_tokens == 220 and not trace.account.estimated
    assert coop.client is not None and coop.client.settings.model.startswith("llama_index/")
    engine = CoopQueryEngine(retriever=CoopRetriever(base, llm=llm, similarity_top_k=3))
    assert str(engine.query(QUESTION)) == "Philadelphia"
    assert str(asyncio.run(engine.aquery(QUESTION))) == "Philadelphia"
    transform = UnrollingQueryTransform(llm)
    assert transform.llm == "llama_index/ScriptedLLM/scripted-7b"
    assert "Who directed Polish Wedding?" in transform(QUESTION).custom_embedding_strs[0]


def test_bridge_retriever_and_judge_run_with_a_llama_index_llm(base) -> None:
    llm = ScriptedLLM()
    bridge = BridgeRetriever(base, similarity_top_k=3, llm=llm)
    nodes = bridge.retrieve(QUESTION)
    trace = bridge.last_trace
    assert trace is not None and trace.account is not None
    assert trace.account.calls == len(llm.prompts) > 0
    assert nodes[1].node.node_id == "theresa-connelly"  # judged 9 of 10, the rest 2
    async_ = asyncio.run(bridge.aretrieve(QueryBundle(QUESTION)))
    assert [n.node.node_id for n in async_] == [n.node.node_id for n in nodes]

    judge = BridgeJudgeRerank(top_n=2, llm=llm)
    scored = [NodeWithScore(node=n, score=1.0 - 0.1 * i) for i, n in enumerate(text_nodes())]
    ranked = judge.postprocess_nodes(scored, query_str=QUESTION)
    assert [n.node.node_id for n in ranked] == ["polish-wedding", "theresa-connelly"]
    assert SIGNALS_KEY in ranked[1].node.metadata
    saved = judge.to_dict()
    assert saved["llm"] == "llama_index/ScriptedLLM/scripted-7b"
    assert llm.api_key not in str(saved)


def test_rag_multihop_llm_lends_its_own_client(base) -> None:
    client = LLMClient("openai/gpt-4o-mini", transport=FakeTransport(default="{}"))
    ours = RagMultihopLLM(client)
    assert as_llm_client(ours) is client
    assert CoopRetriever(base, llm=ours, rala=False).client is client


def test_rag_multihop_llm_wraps_another_llama_index_llm() -> None:
    llm = RagMultihopLLM(ScriptedLLM())  # its calls get the client's retries and account
    assert llm.metadata.model_name == "llama_index/ScriptedLLM/scripted-7b"
    assert llm.complete("Plan how to answer it.").text.startswith('{"sub_questions"')
    reply = asyncio.run(llm.achat([ChatMessage(role="user", content="Candidate passage: x")]))
    assert reply.message.content == '{"score": 2}'
    assert [kind for kind, _ in llm.calls] == ["complete", "chat"]
    assert all(account.total_tokens == 110 for _, account in llm.calls)
    assert "".join(r.delta or "" for r in llm.stream_chat([ChatMessage(role="user", content="Hi")]))


def test_a_model_identity_can_be_given() -> None:
    chat = LlamaIndexChatModel(ScriptedLLM(), model_id="mine/scripted-t0.7")
    assert LLMClient.from_chat(chat).settings.model == "mine/scripted-t0.7"
    assert "Secret" not in repr(chat)


class Leaky:
    """Neither a model string nor an LLM; its repr holds a key."""

    def __repr__(self) -> str:
        return "Leaky(api_key='sk-proj-LEAKYLEAKYLEAKY')"


@pytest.mark.parametrize(
    "build",
    [
        lambda base, llm: CoopRetriever(base, llm=llm, rala=False),
        lambda base, llm: UnrollingQueryTransform(llm),
        lambda base, llm: BridgeRetriever(base, llm=llm),
        lambda base, llm: BridgeJudgeRerank(llm=llm),
        lambda base, llm: as_llm_client(llm),
        lambda base, llm: RagMultihopLLM(llm),
    ],
    ids=["coop", "unrolling", "bridge", "bridge-judge", "as_llm_client", "rag-multihop-llm"],
)
def test_a_wrong_llm_type_is_named_without_its_repr(base, build) -> None:
    with pytest.raises(TypeError) as caught:
        build(base, Leaky())
    assert str(caught.value) == WRONG + "Leaky"
