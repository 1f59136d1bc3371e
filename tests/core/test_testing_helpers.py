"""``rag_multihop.testing``: the helpers the core suite and both integrations' suites share."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from rag_multihop.llm import LLMClient, LLMSettings, RawReply
from rag_multihop.llm.errors import LLMError
from rag_multihop.llm.transport import StreamingTransport
from rag_multihop.testing import (
    POLISH_WEDDING_QUESTION,
    PROMPT_MARKERS,
    FakeTransport,
    HashingEncoder,
    polish_wedding_passages,
    polish_wedding_replies,
)


def client(transport: FakeTransport, **settings: object) -> LLMClient:
    return LLMClient(LLMSettings("openai/gpt-4o-mini", **settings), transport=transport)  # type: ignore[arg-type]


def test_hashing_encoder_is_deterministic_normalised_and_counts_calls():
    encoder = HashingEncoder(dim=32)
    first = encoder.encode(["Theresa Connelly", "theresa connelly."])
    assert first.shape == (2, 32) and first.dtype == np.float32
    np.testing.assert_allclose(first[0], first[1])
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-6)
    assert encoder.encode([""])[0].tolist() == [0.0] * 32
    assert (encoder.calls, encoder.name, encoder.dim) == (2, "hashing-test", 32)


def test_the_toy_corpus_finds_the_bridge_with_the_hashing_encoder():
    from rag_multihop import Corpus, Query
    from rag_multihop.index.dense import DenseRetriever

    dense = DenseRetriever.from_corpus(Corpus(polish_wedding_passages()), HashingEncoder())
    assert dense.retrieve(Query(POLISH_WEDDING_QUESTION), k=1)[0].id == "polish-wedding"


def test_fake_transport_answers_by_prompt_marker_and_records():
    fake = FakeTransport(
        {"capital": "Paris", "river": lambda prompt: prompt.upper()},
        default=RawReply("?", prompt_tokens=3),
        prompt_tokens=10,
        completion_tokens=2,
        cost=1e-5,
    )
    assert isinstance(fake, StreamingTransport)
    llm = client(fake)
    reply = llm.complete("The capital of France?")
    assert (reply.text, reply.account.prompt_tokens, reply.account.cost) == ("Paris", 10, 1e-5)
    assert llm.complete("a river").text == "A RIVER"
    assert llm.complete("anything else").account.prompt_tokens == 3
    assert fake.prompts() == ["The capital of France?", "a river", "anything else"]


def test_fake_transport_plays_a_script_and_raises_its_errors():
    class Unavailable(Exception):
        status_code = 503

    fake = FakeTransport(script=[Unavailable("down"), "ok"])
    llm = LLMClient(
        LLMSettings("openai/gpt-4o-mini", max_retries=1), transport=fake, sleep=lambda s: None
    )
    assert llm.complete("x").text == "ok"
    assert len(fake.requests) == 2
    with pytest.raises(LLMError):
        client(FakeTransport(script=[Unavailable("down")]), max_retries=0).complete("x")


def test_fake_transport_streams_word_by_word_and_counts_concurrency():
    fake = FakeTransport(default="one two three", completion_tokens=3, delay=0.01)
    pieces = list(fake.stream({"messages": [{"content": "q"}]}, api_key=None, timeout=1.0))
    assert "".join(p.text for p in pieces) == "one two three"
    assert (pieces[-1].finish_reason, pieces[-1].completion_tokens) == ("stop", 3)

    async def three() -> None:
        request = {"messages": [{"content": "q"}]}
        await asyncio.gather(
            *(fake.acomplete(request, api_key=None, timeout=1.0) for _ in range(3))
        )

    asyncio.run(three())
    assert (fake.peak, fake.in_flight) == (3, 0)


def test_each_prompt_marker_picks_out_one_kind_of_prompt():
    from rag_multihop.llm import prompts

    templates = {
        "unroll": prompts.QUESTION_UNROLLING,
        "complete": prompts.CHAIN_COMPLETION,
        "key": prompts.KEY_EXTRACTION,
        "entities": prompts.ENTITY_EXTRACTION,
        "queries": prompts.SVO_QUERIES,
        "judge": prompts.TRIPARTITE_JUDGE,
        None: prompts.CONCISE_ANSWER,
    }
    for kind, template in templates.items():
        found = [k for k, marker in PROMPT_MARKERS.items() if marker in template.user]
        assert found == ([kind] if kind else []), template.name
    assert PROMPT_MARKERS["repair"] in prompts.REPAIR


def test_polish_wedding_replies_answer_the_toy_question_and_refuse_unknown_kinds():
    fake = FakeTransport(polish_wedding_replies(key="no"), default='{"answer": "Philadelphia"}')
    llm = client(fake)
    assert "Who directed Polish Wedding?" in llm.complete("Plan how to answer: ...").text
    assert llm.complete("Can the question be answered ...").text == "no"
    judge = "Candidate passage:\nTheresa Connelly is an American screenwriter"
    assert llm.complete(judge).text == '{"score": 9}'
    assert llm.complete("Answer the question.").text == '{"answer": "Philadelphia"}'
    with pytest.raises(ValueError, match="unknown prompt kind 'answer'; choose from repair"):
        polish_wedding_replies(answer="x")


def test_fake_openai_server_answers_litellm_whole_and_streamed_and_breaks_on_request():
    from rag_multihop.llm import LLMSettings
    from rag_multihop.testing import FakeOpenAIServer

    def reply(messages: list[dict]) -> str:
        return f"you said {messages[-1]['content']}"

    with FakeOpenAIServer(reply, prompt_tokens=7, completion_tokens=3, break_on="BREAK") as fake:
        settings = LLMSettings("openai/fake", api_base=fake.url, max_retries=0, api_key_env=None)
        with LLMClient(settings) as llm:
            whole = llm.complete("hello there")
            assert (whole.text, whole.account.prompt_tokens) == ("you said hello there", 7)
            pieces = list(llm.stream("one two three"))
            assert "".join(pieces) == "you said one two three"
            with pytest.raises(LLMError):
                list(llm.stream("BREAK now please"))
        assert [r.get("stream", False) for r in fake.requests][:2] == [False, True]
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.url
