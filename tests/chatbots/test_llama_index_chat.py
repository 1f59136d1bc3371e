"""The LlamaIndex chat's loop with a plain-object fake LLM: condensing, citations, account."""

from __future__ import annotations

import chatkit
import fake_openai
import pytest
from chat_fakes import FakeTransport
from llama_index_chat import LlamaIndexChat, LlamaIndexStack, cited_nodes

from rag_multihop.llm import LLMCallError, LLMClient, LLMSettings

SETTINGS = LLMSettings("openai/fake", api_base="http://127.0.0.1:9/v1", max_retries=0)
QUESTION = "Where was the founder of Veldmark Ropeworks born?"


@pytest.fixture(scope="module")
def stack(demo_corpus: chatkit.ChatCorpus) -> LlamaIndexStack:
    return LlamaIndexStack(demo_corpus)


def chat(stack: LlamaIndexStack, transport: FakeTransport, method: str = "dense") -> LlamaIndexChat:
    return LlamaIndexChat(stack, SETTINGS, method, client=LLMClient(SETTINGS, transport=transport))


def test_follow_up_is_condensed_with_the_history(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    first = conversation.stream(QUESTION).run()
    assert first.retrieval.standalone == QUESTION
    assert first.account.condense.calls == 0
    follow_up = conversation.stream("When did she die?").run()
    assert follow_up.retrieval.standalone == f"{fake_openai.STANDALONE} When did she die?"
    condense_prompt = str(fake_transport.requests[1]["messages"])
    assert QUESTION in condense_prompt and "When did she die?" in condense_prompt
    assert follow_up.account.condense.calls == 1


def test_cited_sources_are_retrieved_passages(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    stream = conversation.stream(QUESTION)
    pieces = list(stream)
    result = stream.result
    assert "".join(pieces) == fake_openai.ANSWER == result.answer
    assert stream.retrieval is not None and len(result.retrieval.sources) == chatkit.TOP_K
    cited = sorted((e for e in result.evidence if e.cited), key=lambda e: e.number)
    assert [e.source for e in cited] == list(result.retrieval.sources[:2])
    prompt = str(fake_transport.requests[-1]["messages"])
    for number, source in enumerate(result.retrieval.sources, start=1):
        assert f"source: [{number}]" in prompt and source.text[:40] in prompt


def test_cited_nodes_of_an_engine_response(stack, fake_transport) -> None:
    engine = chat(stack, fake_transport).engine()
    response = engine.stream_chat(QUESTION)
    response.print_response_stream = None  # consumed below
    assert "".join(response.response_gen) == fake_openai.ANSWER
    nodes = cited_nodes(response)
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in response.source_nodes[:2]]


def test_account_adds_up(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    conversation.stream(QUESTION).run()
    account = conversation.stream("And then?").run().account
    assert account.total.calls == account.condense.calls + account.answer.calls == 2
    assert account.total.prompt_tokens == 80 and account.total.completion_tokens == 18
    assert conversation.client.total.calls == 3  # turn 1 (answer) + turn 2 (condense, answer)


@pytest.mark.parametrize("method", list(chatkit.METHODS))
def test_every_method_answers_with_its_signals(stack, fake_transport, method: str) -> None:
    result = chat(stack, fake_transport, method).stream(QUESTION).run()
    assert result.retrieval.method == method and len(result.retrieval.sources) == chatkit.TOP_K
    names = set().union(*(s.signals for s in result.retrieval.sources))
    expected = {
        "multihop": "pair",
        "dense": "dense",
        "graph-fusion": "graph_cal",
        "bridge": "judge",
        "aar": "association",
        "coop": "rala",
    }
    assert expected[method] in names


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_broken_stream_raises_and_the_chat_goes_on(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    conversation.stream(QUESTION).run()
    stream = conversation.stream(f"{fake_openai.FAIL} please")
    with pytest.raises(LLMCallError, match="broke after 2 piece"):
        list(stream)
    assert conversation.memory.get_all()[0].content == QUESTION
    assert len(conversation.memory.get_all()) == 2  # the failed turn left no trace
    assert conversation.stream(QUESTION).run().answer == fake_openai.ANSWER


def test_bad_questions_are_refused_before_any_call(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    with pytest.raises(chatkit.ChatInputError, match="Type a question"):
        conversation.stream("")
    with pytest.raises(chatkit.ChatInputError, match="context window"):
        conversation.stream("why " * 5000)
    assert fake_transport.requests == []


@pytest.mark.parametrize("method", ["bridge", "multihop"])
def test_the_chain_comes_from_the_retrievers_trace(stack, fake_transport, method: str) -> None:
    result = chat(stack, fake_transport, method).stream(QUESTION).run()
    trace = result.retrieval.trace
    assert trace is not None
    first = trace["bridge_id"] if method == "bridge" else trace["pair"][0]
    hop1 = [e.source.id for e in result.evidence if e.step == "hop 1"]
    assert hop1[0] == first and any(e.step == "hop 2" for e in result.evidence)
