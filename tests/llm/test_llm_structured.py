"""JSON replies: parsing, validation and the one-repair fallback (hand-written cassettes)."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import BaseModel
from vcr.cassette import Cassette

from rag_multihop.llm import LLMClient, LLMOutputError, LLMSettings
from rag_multihop.llm.prompts import (
    BridgeEntities,
    JudgeScore,
    format_entity_extraction,
    format_tripartite_judge,
)
from rag_multihop.llm.structured import extract_json_object, parse_reply

MODEL = "openai/gpt-4o-mini"
OPENAI_BASE = "https://api.openai.com/v1"

QUESTION = "Who directed the 1998 film Polish Wedding?"
BRIDGE = (
    "Polish Wedding is a 1998 American comedy-drama film written and directed by Theresa Connelly."
)
CANDIDATE = "Theresa Connelly is an American film director and screenwriter."
JUDGE = format_tripartite_judge(QUESTION, BRIDGE, "Polish Wedding", "Theresa Connelly", CANDIDATE)


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    # scripted bad replies: never re-record
    return {**vcr_config, "record_mode": "none"}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> LLMClient:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return LLMClient(LLMSettings(MODEL, api_base=OPENAI_BASE, max_retries=0))


class Pair(BaseModel):
    a: int
    b: str


# ---------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": "x"}',
        '  \n{"a": 1, "b": "x"}\n',
        '```json\n{"a": 1, "b": "x"}\n```',
        '```\n{"a": 1, "b": "x"}\n```',
        'Here you go:\n```json\n{"a": 1, "b": "x"}\n```\nAnything else?',
        'Sure. {"a": 1, "b": "x"} Hope that helps {"a": 2}',
        'Set {curly} aside: {"a": 1, "b": "x"}',
    ],
)
def test_json_object_is_found_in_common_reply_shapes(text: str) -> None:
    assert parse_reply(text, Pair) == Pair(a=1, b="x")


def test_braces_inside_strings_do_not_confuse_the_parser() -> None:
    assert extract_json_object('x {"b": "}{", "a": 1} y') == {"b": "}{", "a": 1}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "empty"),
        ("   ", "empty"),
        ("I think the score is high.", "malformed"),
        ('["a", "b"]', "malformed"),
        ('{"a": 1, "b": "x"', "malformed"),
        ('{"a": "one", "b": "x"}', "invalid"),
        ('{"b": "x"}', "invalid"),
        ("[" * 100_000, "malformed"),  # nested deeper than Python's recursion limit
        ('{"a":' * 5_000, "malformed"),
    ],
)
def test_unusable_replies_raise_with_a_reason(text: str | None, reason: str) -> None:
    with pytest.raises(LLMOutputError) as info:
        parse_reply(text, Pair)
    assert info.value.reason == reason
    assert info.value.raw == text


def test_validation_error_names_the_field() -> None:
    with pytest.raises(
        LLMOutputError, match=r"reply does not match JudgeScore: score: .*less than"
    ):
        parse_reply('{"score": 12}', JudgeScore)


@pytest.mark.parametrize(
    ("refusal", "finish_reason"), [("I can't help with that.", "stop"), (None, "content_filter")]
)
def test_refusals_are_reported_even_with_json(refusal: str | None, finish_reason: str) -> None:
    with pytest.raises(LLMOutputError, match="refused") as info:
        parse_reply('{"a": 1, "b": "x"}', Pair, refusal=refusal, finish_reason=finish_reason)
    assert info.value.reason == "refused"


# ---------------------------------------------------------------------- replies over HTTP


@pytest.mark.vcr
def test_good_reply_in_a_code_fence(client: LLMClient, vcr: Cassette) -> None:
    reply = client.complete_json(format_entity_extraction(QUESTION, BRIDGE), BridgeEntities)
    assert reply.value == BridgeEntities(e1="Polish Wedding", e2="Theresa Connelly")
    assert not reply.repaired and not reply.fallback
    assert reply.account.calls == 1 and reply.account.prompt_tokens == 196
    assert vcr.play_count == 1


@pytest.mark.vcr
def test_malformed_reply_is_repaired_once(client: LLMClient, vcr: Cassette) -> None:
    reply = client.complete_json(JUDGE, JudgeScore)
    assert reply.value.score == 9 and reply.repaired and not reply.fallback
    assert reply.account.calls == 2
    assert reply.account.prompt_tokens == 298 + 612  # both attempts are paid for
    assert vcr.play_count == 2
    repair = json.loads(vcr.requests[1].body)["messages"]
    assert repair[:2] == JUDGE
    assert repair[2] == {"role": "assistant", "content": "The candidate is highly relevant."}
    assert repair[3]["content"].startswith("Your previous reply could not be used: no JSON")


@pytest.mark.vcr
def test_unusable_after_repair_raises_with_the_spend(client: LLMClient, vcr: Cassette) -> None:
    with pytest.raises(LLMOutputError, match="less than or equal to 10") as info:
        client.complete_json(JUDGE, JudgeScore)
    assert info.value.reason == "invalid"
    assert info.value.account.calls == 2
    assert vcr.play_count == 2


@pytest.mark.vcr
def test_unusable_after_repair_returns_the_callers_default(
    client: LLMClient,
    vcr: Cassette,
    caplog: pytest.LogCaptureFixture,
) -> None:
    neutral = JudgeScore(score=5)
    with caplog.at_level(logging.WARNING, logger="rag_multihop.llm.client"):
        reply = client.complete_json(JUDGE, JudgeScore, default=neutral)
    assert reply.value is neutral and reply.fallback and reply.error is not None
    assert reply.error.reason == "invalid" and reply.raw == '{"score": 12}'
    assert reply.account.calls == 2
    assert "using the caller's default" in caplog.text


@pytest.mark.vcr
def test_refusal_is_not_repaired(client: LLMClient, vcr: Cassette) -> None:
    with pytest.raises(LLMOutputError, match="the model refused: I'm sorry") as info:
        client.complete_json(JUDGE, JudgeScore)
    assert info.value.reason == "refused" and info.value.account.calls == 1
    assert vcr.play_count == 1


@pytest.mark.vcr
def test_truncated_reply_is_repaired(client: LLMClient, vcr: Cassette) -> None:
    reply = client.complete_json(JUDGE, JudgeScore)
    assert reply.repaired and reply.value.score == 9
    assert vcr.play_count == 2


@pytest.mark.vcr
@pytest.mark.anyio
async def test_async_repair(client: LLMClient, vcr: Cassette) -> None:
    reply = await client.acomplete_json(JUDGE, JudgeScore)
    assert reply.value.unit == pytest.approx(0.9) and reply.repaired
    assert vcr.play_count == 2
