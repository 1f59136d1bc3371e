"""The LlamaIndex chat's loop with a plain-object fake LLM: condensing, citations, account."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import chatkit
import fake_openai
import pytest
from chat_fakes import FakeTransport
from llama_index_chat import LlamaIndexChat, LlamaIndexStack, cited_nodes

from rag_multihop.llm import LLMClient, LLMSettings

SETTINGS = LLMSettings("openai/fake", api_base="http://127.0.0.1:9/v1", max_retries=0)
QUESTION = "Where was the founder of Veldmark Ropeworks born?"


@pytest.fixture(scope="module")
def stack(demo_corpus: chatkit.ChatCorpus) -> LlamaIndexStack:
    return LlamaIndexStack(demo_corpus)


def chat(stack: LlamaIndexStack, transport: FakeTransport, method: str = "dense") -> LlamaIndexChat:
    return LlamaIndexChat(stack, SETTINGS, method, client=LLMClient(SETTINGS, transport=transport))


def test_a_capable_models_rewrite_is_checked_and_used(stack, fake_transport) -> None:
    conversation = chat(stack, fake_transport)
    first = conversation.stream(QUESTION).run()
    assert first.retrieval.standalone == QUESTION and first.account.condense.calls == 0
    follow_up = conversation.stream("When did she die?").run()
    # the scripted rewrite "Standalone: When did she die?" is a question about the new turn
    assert follow_up.retrieval.standalone == "When did she die?"
    assert follow_up.retrieval.how == "model rewrite"
    condense_prompt = str(fake_transport.requests[1]["messages"])
    assert QUESTION in condense_prompt and "When did she die?" in condense_prompt
    assert follow_up.account.condense.calls == 1


def test_a_small_model_condenses_without_a_call(stack, fake_transport) -> None:
    conversation = LlamaIndexChat(
        stack,
        SETTINGS,
        "multihop",
        client=LLMClient(SETTINGS, transport=fake_transport),
        small_model=True,
    )
    conversation.stream(QUESTION).run()
    follow_up = conversation.stream("When did she die?").run()
    assert follow_up.retrieval.standalone == "When did Marit Hallendor die?"
    assert follow_up.account.condense.calls == 0 and len(fake_transport.requests) == 2
    assert [e.source.id for e in follow_up.evidence if e.cited] == ["marit-hallendor"]


def test_the_answer_is_from_the_passages_and_the_model_sees_the_cards_numbers(
    stack, fake_transport
) -> None:
    conversation = chat(stack, fake_transport, "multihop")
    stream = conversation.stream(QUESTION)
    pieces = list(stream)
    result = stream.result
    assert "".join(pieces) == fake_openai.ANSWER == result.generated
    assert result.answer == result.retrieval.answer.text and "Marit Hallendor [1]" in result.answer
    cited = [e.source.id for e in result.evidence if e.cited]
    assert cited == ["veldmark-ropeworks", "marit-hallendor"]  # the [n] of the answer, not all
    assert [e.number for e in result.evidence] == [1, 2, 3, 4, 5]
    assert [e.step for e in result.evidence][:2] == ["hop 1", "hop 2"]
    prompt = str(fake_transport.requests[-1]["messages"])
    for e in result.evidence:
        assert f"source: [{e.number}]" in prompt
    assert prompt.index("source: [1]") < prompt.index(result.evidence[0].source.text[:40])


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
    account = conversation.stream("And when did she die?").run().account
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
def test_a_broken_stream_keeps_the_passage_answer_and_the_chat_goes_on(
    stack, fake_transport
) -> None:
    conversation = chat(stack, fake_transport)
    conversation.stream(QUESTION).run()
    result = conversation.stream(f"{fake_openai.FAIL} please").run()
    assert result.error is not None and "broke after 2 piece" in result.error
    assert chatkit.cited_numbers(result.answer, chatkit.TOP_K)  # the passages' answer stands
    assert conversation.memory.get_all()[0].content == QUESTION
    assert len(conversation.memory.get_all()) == 2  # the failed answer left no trace
    assert conversation.stream(QUESTION).run().generated == fake_openai.ANSWER


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


def test_sessions_asking_their_first_question_at_once_build_the_index_once(
    tmp_path: Path, hashing_encoder, index_builds: list[Path]
) -> None:
    shared = LlamaIndexStack(chatkit.load_chat_corpus(encoder=hashing_encoder, cache=tmp_path))

    def first_question(_: int) -> chatkit.TurnResult:
        return chat(shared, FakeTransport(), "multihop").stream(QUESTION).run()

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(first_question, range(3)))
    assert len(index_builds) == 1
    assert all(r.evidence[0].step == "hop 1" for r in results)  # each kept its trace
