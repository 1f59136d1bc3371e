"""Replies recorded from the embedded local model (SmolLM2-135M on llama.cpp's server).

The cassettes in ``tests/cassettes/test_llm_recorded_local/`` are real recordings (see
tests/cassettes/README.md). Replay needs no server: it matches on method and path, so the
port the server had when recording does not matter. To re-record:

    rag-multihop llm serve &                       # prints api_base=..., api_key=KEY
    RAG_MULTIHOP_TEST_LOCAL_API_BASE=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=KEY \\
        python -m pytest tests/llm/test_llm_recorded_local.py --record-mode=rewrite

A 135M model's content is poor, so the assertions are about shapes and accounting only.
"""

from __future__ import annotations

import os

import pytest
from vcr.cassette import Cassette

from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.llm.prompts import (
    JudgeScore,
    SVOQueries,
    format_svo_queries,
    format_tripartite_judge,
)

API_BASE = os.environ.get("RAG_MULTIHOP_TEST_LOCAL_API_BASE", "http://127.0.0.1:8080/v1")
QUESTION = "Where was the director of Polish Wedding born?"
BRIDGE = "Polish Wedding is a 1998 film written and directed by Theresa Connelly."
CANDIDATE = "Theresa Connelly is an American screenwriter born in Philadelphia."


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    return {**vcr_config, "match_on": ["method", "path"]}


@pytest.fixture
def client() -> LLMClient:
    settings = LLMSettings(
        "openai/smollm2-135m",
        api_base=API_BASE,
        max_retries=0,
        max_concurrency=1,
        max_tokens=48,
        json_schema=True,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
    )
    return LLMClient(settings)


@pytest.mark.vcr
def test_text_reply(client: LLMClient, vcr: Cassette) -> None:
    reply = client.complete("Name one colour.")
    assert isinstance(reply.text, str) and reply.text.strip()
    assert reply.account.calls == 1 and reply.account.prompt_tokens > 0
    assert reply.account.cost == 0.0 and len(vcr) == 1


@pytest.mark.vcr
def test_schema_constrained_judge_score(client: LLMClient) -> None:
    messages = format_tripartite_judge(QUESTION, BRIDGE, "Theresa Connelly", "", CANDIDATE)
    reply = client.complete_json(messages, JudgeScore)
    assert not reply.fallback and not reply.repaired
    assert reply.value.score in range(11)


@pytest.mark.vcr
def test_schema_constrained_queries(client: LLMClient) -> None:
    messages = format_svo_queries(QUESTION, BRIDGE, n=3)
    reply = client.complete_json(messages, SVOQueries, default=SVOQueries(queries=[QUESTION]))
    assert reply.value.queries and all(q.strip() for q in reply.value.queries)
    assert reply.account.calls in (1, 2)  # a reply cut at max_tokens gets one repair


@pytest.mark.vcr
def test_streamed_reply(client: LLMClient, vcr: Cassette) -> None:
    stream = client.stream("Count from one to three in words.")
    pieces = list(stream)
    assert len(pieces) > 1 and stream.reply is not None
    assert "".join(pieces) == stream.reply.text
    assert stream.reply.account.completion_tokens > 0 and len(vcr) == 1
