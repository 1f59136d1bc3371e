"""Good-path LLM calls whose cassettes can be re-recorded against a live model.

The stored cassettes are hand-written (see tests/cassettes/README.md). To re-record them
against an OpenAI-compatible endpoint:

    OPENAI_API_KEY=sk-... python -m pytest tests/llm/test_llm_recorded.py --record-mode=rewrite

and for another server, also set ``RAG_MULTIHOP_TEST_LLM_MODEL`` (e.g. ``openai/qwen2.5-7b``)
and ``RAG_MULTIHOP_TEST_LLM_API_BASE`` (e.g. ``http://localhost:8000/v1``). Replay matches on
method and path only, so cassettes recorded on any OpenAI-compatible host replay anywhere.
The assertions hold for any competent model, not just the stored replies.
"""

from __future__ import annotations

import os

import pytest
from vcr.cassette import Cassette

from rag_multihop.graph.llm_extract import LLMEntityExtractor
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.llm.prompts import (
    BridgeEntities,
    JudgeScore,
    SVOQueries,
    format_entity_extraction,
    format_svo_queries,
    format_tripartite_judge,
)

MODEL = os.environ.get("RAG_MULTIHOP_TEST_LLM_MODEL", "openai/gpt-4o-mini")
API_BASE = os.environ.get("RAG_MULTIHOP_TEST_LLM_API_BASE", "https://api.openai.com/v1")

QUESTION = "Who directed the 1998 film Polish Wedding?"
BRIDGE = (
    "Polish Wedding is a 1998 American comedy-drama film written and directed by Theresa "
    "Connelly. It stars Claire Danes, Gabriel Byrne and Lena Olin."
)
GOLD = (
    "Theresa Connelly is an American film director and screenwriter, known for Polish "
    "Wedding (1998)."
)


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    # match on method and path: cassettes recorded on any OpenAI-compatible host replay
    return {**vcr_config, "match_on": ["method", "path"]}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> LLMClient:
    if MODEL.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # replay only
    # one request at a time, so order-based replay pairs each request with its reply
    return LLMClient(LLMSettings(MODEL, api_base=API_BASE, max_retries=0, max_concurrency=1))


@pytest.mark.vcr
def test_complete_sync(client: LLMClient, vcr: Cassette) -> None:
    reply = client.complete("What is the capital of France? Answer with the city name only.")
    assert reply.text is not None and "paris" in reply.text.lower()
    assert reply.account.calls == 1 and reply.account.prompt_tokens > 0
    assert reply.account.cost is None or reply.account.cost > 0
    assert len(vcr) == 1  # one interaction, replayed or just recorded


@pytest.mark.vcr
@pytest.mark.anyio
async def test_complete_async(client: LLMClient, vcr: Cassette) -> None:
    reply = await client.acomplete("What is the capital of Italy? Answer with the city name only.")
    assert reply.text is not None and "rome" in reply.text.lower()
    assert reply.account.completion_tokens > 0
    assert len(vcr) == 1  # one interaction, replayed or just recorded


@pytest.mark.vcr
def test_bridge_entities(client: LLMClient) -> None:
    reply = client.complete_json(format_entity_extraction(QUESTION, BRIDGE), BridgeEntities)
    names = {reply.value.e1.lower(), reply.value.e2.lower()}
    assert all(name and name in BRIDGE.lower() for name in names)
    assert "theresa connelly" in names


@pytest.mark.vcr
def test_svo_queries(client: LLMClient) -> None:
    reply = client.complete_json(format_svo_queries(QUESTION, BRIDGE, n=3), SVOQueries)
    assert 1 <= len(reply.value.queries) <= 5
    assert any("connelly" in q.lower() for q in reply.value.queries)


@pytest.mark.vcr
def test_tripartite_judge(client: LLMClient) -> None:
    messages = format_tripartite_judge(QUESTION, BRIDGE, "Polish Wedding", "Theresa Connelly", GOLD)
    reply = client.complete_json(messages, JudgeScore)
    assert not reply.fallback and reply.value.score >= 5


@pytest.mark.vcr
def test_entity_extractor(client: LLMClient) -> None:
    extractor = LLMEntityExtractor(client)
    with client:
        entities = extractor.extract([BRIDGE, "", GOLD])
    assert {"polish wedding", "theresa connelly"} <= set(entities[0])
    assert entities[1] == []
    assert "theresa connelly" in entities[2]
    assert extractor.account.calls == 2
