"""BridgeRAG's LLM mode with plain-object fake transports: accounts, concurrency, bad replies,
missing keys, unknown models, and timeouts / rate limits beyond the retry budget."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rag_multihop import Corpus, Query
from rag_multihop.bridge import NEUTRAL_SCORE, BridgeRetriever, LLMJudge, LLMQueryWriter
from rag_multihop.bridge.queries import make_client
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import (
    LiteLLMTransport,
    LLMCallError,
    LLMClient,
    LLMConfigError,
    LLMOutputError,
    LLMSettings,
    RawReply,
)
from rag_multihop.testing import POLISH_WEDDING_QUESTION, polish_wedding_passages
from rag_multihop.types import Candidate

MODEL = "openai/gpt-4o-mini"
PASSAGES = polish_wedding_passages()
QUESTION = Query(POLISH_WEDDING_QUESTION, id="q1")


def good_judge(prompt: str) -> str:
    candidate = prompt.split("Candidate passage:", 1)[1]
    return '{"score": 9}' if "Theresa Connelly is" in candidate else '{"score": 2}'


class FakeLLM:
    """A ``Transport`` answering by prompt kind; records requests and peak concurrency."""

    def __init__(
        self,
        *,
        judge: Callable[[str], str] = good_judge,
        entities: str = '{"e1": "Theresa Connelly", "e2": "Polish Wedding"}',
        queries: str = '{"queries": ["Theresa Connelly born in", "Polish Wedding director"]}',
        repair: str | None = None,
        fail: Exception | None = None,
        delay: float = 0.0,
    ) -> None:
        self.judge, self.entities, self.queries = judge, entities, queries
        self.repair, self.fail, self.delay = repair, fail, delay
        self.requests: list[Mapping[str, Any]] = []
        self.in_flight = self.peak = 0

    def check_model(self, model: str) -> None:
        return None

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def _text(self, prompt: str) -> str:
        if "could not be used" in prompt:
            return self.repair if self.repair is not None else "still not JSON"
        if "Name the two entities" in prompt:
            return self.entities
        if "subject-verb-object" in prompt:
            return self.queries
        return self.judge(prompt)

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        text = self._text(request["messages"][-1]["content"])
        return RawReply(text, "stop", None, "gpt-4o-mini", 100, 5, 2e-5)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return self.complete(request, api_key=api_key, timeout=timeout)
        finally:
            self.in_flight -= 1


class Failure(Exception):
    """A provider-like error classified by ``status_code``."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


async def _no_wait(seconds: float) -> None:
    return None


def client(fake: FakeLLM, **settings: Any) -> LLMClient:
    return LLMClient(
        LLMSettings(MODEL, **settings), transport=fake, sleep=lambda s: None, async_sleep=_no_wait
    )


@pytest.fixture
def dense(hashing_encoder) -> DenseRetriever:
    return DenseRetriever.from_corpus(Corpus(PASSAGES), hashing_encoder)


def test_llm_mode_end_to_end_with_per_query_account(dense: DenseRetriever) -> None:
    fake = FakeLLM()
    with client(fake) as llm:
        result = BridgeRetriever.with_llm(dense, llm).run(QUESTION, k=3)
    assert [c.id for c in result.candidates[:2]] == ["polish-wedding", "theresa-connelly"]
    trace = result.trace
    assert trace.entities == ("Theresa Connelly", "Polish Wedding")
    assert trace.queries == ("Theresa Connelly born in", "Polish Wedding director")
    assert trace.judge == "llm" and trace.fallbacks == 0
    pool = len(trace.pool_ids)
    assert trace.account is not None
    assert trace.account.calls == 2 + pool == len(fake.requests)
    assert trace.account.prompt_tokens == 100 * (2 + pool)
    assert trace.account.cost == pytest.approx(2e-5 * (2 + pool))
    judged = result.candidates[1].signals["judge"]
    assert judged == pytest.approx(0.9)


def test_async_mode_runs_calls_concurrently_within_the_bound(dense: DenseRetriever) -> None:
    fake = FakeLLM(delay=0.02)
    llm = client(fake, max_concurrency=3)
    result = asyncio.run(BridgeRetriever.with_llm(dense, llm).arun(QUESTION, k=3))
    assert result.candidates[1].id == "theresa-connelly"
    assert 2 <= fake.peak <= 3


def test_malformed_judge_replies_fall_back_to_the_neutral_score(
    dense: DenseRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeLLM(judge=lambda prompt: "I think it is quite relevant!")
    with caplog.at_level(logging.WARNING), client(fake) as llm:
        result = BridgeRetriever.with_llm(dense, llm).run(QUESTION, k=3)
    pool = len(result.trace.pool_ids)
    assert result.trace.fallbacks == pool
    judged = [c.signals["judge"] for c in result.candidates if "judge" in c.signals]
    assert judged == [NEUTRAL_SCORE] * 2  # k=3: the bridge and two judged candidates
    assert result.trace.account is not None
    assert result.trace.account.calls == 2 + 2 * pool  # each judge call was repaired once
    assert "judge replies unusable" in caplog.text


@pytest.mark.parametrize("bad", ["", '{"score": 15}', '{"score": "high"}', '{"score": NaN}'])
def test_empty_and_out_of_range_judge_replies_are_neutral(bad: str) -> None:
    fake = FakeLLM(judge=lambda prompt: bad, repair=bad)
    with client(fake) as llm:
        judgement = LLMJudge(llm).score(QUESTION, PASSAGES[0], [], PASSAGES[1:3])
    assert judgement.scores.tolist() == [NEUTRAL_SCORE, NEUTRAL_SCORE]
    assert judgement.fallbacks == 2


def test_judge_can_raise_instead_of_falling_back() -> None:
    fake = FakeLLM(judge=lambda prompt: "no JSON here")
    with client(fake) as llm, pytest.raises(LLMOutputError, match="no JSON object"):
        LLMJudge(llm, on_error="raise").score(QUESTION, PASSAGES[0], [], PASSAGES[1:2])


def test_a_repaired_judge_reply_counts_as_usable() -> None:
    fake = FakeLLM(judge=lambda prompt: "Score: high", repair='{"score": 7}')
    with client(fake) as llm:
        judgement = LLMJudge(llm).score(QUESTION, PASSAGES[0], ["e"], PASSAGES[1:2])
    assert judgement.scores.tolist() == [0.7] and judgement.fallbacks == 0


def test_malformed_plan_replies_fall_back_to_no_entities_and_the_question() -> None:
    fake = FakeLLM(entities="e1 is Theresa", queries='{"queries": []}')
    with client(fake) as llm:
        plan = LLMQueryWriter(llm).plan(QUESTION, PASSAGES[0])
    assert plan.entities == () and plan.queries == (QUESTION.text,)
    assert plan.fallbacks == 2 and plan.account is not None and plan.account.calls == 4
    with client(FakeLLM(entities="nope")) as llm, pytest.raises(LLMOutputError):
        LLMQueryWriter(llm, on_error="raise").plan(QUESTION, PASSAGES[0])


def test_missing_key_names_the_variable(
    dense: DenseRetriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_MULTIHOP_BRIDGE_TEST_KEY", raising=False)
    llm = client(FakeLLM(), api_key_env="RAG_MULTIHOP_BRIDGE_TEST_KEY")
    with pytest.raises(LLMConfigError, match="RAG_MULTIHOP_BRIDGE_TEST_KEY"):
        BridgeRetriever.with_llm(dense, llm).run(QUESTION, k=3)


def test_missing_provider_key_and_unknown_model_with_litellm(
    dense: DenseRetriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        BridgeRetriever.with_llm(dense, MODEL).run(QUESTION, k=3)
    unknown = LLMClient(LLMSettings("gpt4o/mini"), transport=LiteLLMTransport())
    with pytest.raises(LLMConfigError, match="unknown model string 'gpt4o/mini'"):
        BridgeRetriever.with_llm(dense, unknown).run(QUESTION, k=3)


@pytest.mark.parametrize("failure", [TimeoutError("read timed out"), Failure(429), Failure(503)])
def test_failures_beyond_the_retry_budget_raise_call_errors(
    dense: DenseRetriever, failure: Exception
) -> None:
    fake = FakeLLM(fail=failure)
    with client(fake, max_retries=2) as llm, pytest.raises(LLMCallError) as caught:
        BridgeRetriever.with_llm(dense, llm).run(QUESTION, k=3)
    assert caught.value.attempts == 3
    assert "failed after 3 attempt(s)" in str(caught.value)


def test_async_failure_propagates_too(dense: DenseRetriever) -> None:
    llm = client(FakeLLM(fail=Failure(429)), max_retries=1)
    with pytest.raises(LLMCallError, match="failed after 2 attempt"):
        asyncio.run(BridgeRetriever.with_llm(dense, llm).arun(QUESTION, k=3))


def test_sync_run_inside_an_event_loop_points_to_the_async_api(dense: DenseRetriever) -> None:
    bridge = BridgeRetriever.with_llm(dense, client(FakeLLM()))

    async def inside() -> list[str]:
        with pytest.raises(RuntimeError, match=r"await retriever\.arun\(\.\.\.\)"):
            bridge.run(QUESTION, k=3)
        return [c.id for c in (await bridge.arun(QUESTION, k=3)).candidates]

    assert asyncio.run(inside())[1] == "theresa-connelly"


def test_llm_reranker_makes_one_call_per_candidate() -> None:
    fake = FakeLLM()
    found = [Candidate(p, 1.0 - 0.1 * i) for i, p in enumerate(PASSAGES)]
    with client(fake) as llm:
        ranked = BridgeReranker.with_llm(llm).rerank(QUESTION, found, top_n=2)
    assert [c.id for c in ranked] == ["polish-wedding", "theresa-connelly"]
    assert len(fake.requests) == len(PASSAGES) - 1


def test_llm_settings_are_validated() -> None:
    llm = client(FakeLLM())
    with pytest.raises(ValueError, match="n_queries must be an integer in \\[1, 10\\], got 0"):
        LLMQueryWriter(llm, n_queries=0)
    with pytest.raises(ValueError, match="on_error must be one of \\['neutral', 'raise'\\]"):
        LLMJudge(llm, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency must be a positive integer"):
        LLMJudge(llm, concurrency=0)
    with pytest.raises(ValueError, match="apply to a model-string llm"):
        make_client(llm, api_base="http://localhost:8000/v1")
    with pytest.raises(TypeError, match="llm must be a litellm model string"):
        make_client(42)  # type: ignore[arg-type]
    made = make_client(MODEL, api_base="http://localhost:8000/v1", api_key_env="MY_KEY")
    assert made.settings.api_key_env == "MY_KEY" and made.settings.api_base.endswith("/v1")
