"""BridgeRAG's LLM mode replayed from a hand-written cassette in OpenAI's wire format.

One cassette (``tests/cassettes/test_bridge_recorded/bridge_llm_pipeline.yaml``) holds the
calls of one question: the entity extraction, the SVO queries and one tripartite judge call
per pool candidate. The judge calls run concurrently, so replay matches requests on their
``messages`` (vcrpy's order-based default would pair them at random). The same cassette
serves the sync pipeline, the async pipeline and the ``bridge`` benchmark method with
``--option llm=...``, which must record calls, tokens, cost and latency per query.
See ``tests/cassettes/README.md`` for how it was made and how to re-record it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import vcr
from vcr.request import Request

from rag_multihop import Corpus, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.testing import POLISH_WEDDING_QUESTION, polish_wedding_passages
from tests.conftest import CASSETTES

CASSETTE = CASSETTES / "test_bridge_recorded" / "bridge_llm_pipeline.yaml"
MODEL = "openai/gpt-4o-mini"
API_BASE = "https://api.openai.com/v1"

PASSAGES = polish_wedding_passages()
QUESTION = POLISH_WEDDING_QUESTION


def _messages(request: Request) -> Any:
    return json.loads(request.body or b"{}").get("messages")


def llm_messages(r1: Request, r2: Request) -> None:
    """vcrpy matcher: the chat messages of both requests are equal."""
    assert _messages(r1) == _messages(r2), "messages differ"


def replay() -> Any:
    recorder = vcr.VCR(record_mode="none", filter_headers=["authorization"])
    recorder.register_matcher("llm_messages", llm_messages)
    return recorder.use_cassette(str(CASSETTE), match_on=["method", "host", "path", "llm_messages"])


@pytest.fixture(autouse=True)
def _offline_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # replay only


def pipeline(hashing_encoder) -> BridgeRetriever:
    dense = DenseRetriever.from_corpus(Corpus(PASSAGES), hashing_encoder)
    client = LLMClient(LLMSettings(MODEL, api_base=API_BASE, max_retries=0))
    return BridgeRetriever.with_llm(dense, client)


def check(result: Any) -> None:
    assert [c.id for c in result.candidates[:2]] == ["polish-wedding", "theresa-connelly"]
    assert result.trace.entities == ("Theresa Connelly", "Polish Wedding")
    assert len(result.trace.queries) == 3
    account = result.trace.account
    assert account.calls == 2 + len(result.trace.pool_ids) == 6
    assert account.prompt_tokens > 0 and account.completion_tokens > 0
    assert account.cost is not None and account.cost > 0
    assert result.trace.fallbacks == 0


def test_llm_pipeline_sync(hashing_encoder) -> None:
    bridge = pipeline(hashing_encoder)
    with replay() as cassette:
        result = bridge.run(Query(QUESTION), k=5)
    check(result)
    assert cassette.all_played and cassette.play_count == 6


def test_llm_pipeline_async(hashing_encoder) -> None:
    bridge = pipeline(hashing_encoder)
    with replay() as cassette:
        result = asyncio.run(bridge.arun(Query(QUESTION), k=5))
    check(result)
    assert cassette.all_played


def test_bench_with_llm_option_reports_calls_tokens_cost_and_latency(hashing_encoder) -> None:
    data = Dataset(
        "toy",
        Corpus(PASSAGES),
        (
            QAExample(
                "q1", QUESTION, ("Philadelphia",), ("polish-wedding", "theresa-connelly"), True
            ),
        ),
        "native",
    )
    options = {"llm": MODEL, "llm_api_base": API_BASE, "llm_concurrency": "4"}
    with replay() as cassette:
        result = run_benchmark(
            data, ["bridge"], encoder=hashing_encoder, ks=(1, 2, 5), options=options
        )
    assert cassette.all_played
    method = result.methods["bridge"]
    assert method.recall[2] == 1.0
    extras = method.extras
    assert extras["mode"] == "llm" and extras["judge"] == "llm"
    report = extras["llm"]
    assert report["model"] == MODEL
    assert report["total"]["calls"] == 6 and report["total"]["total_tokens"] > 0
    assert report["total"]["cost"] > 0
    assert report["per_query"]["calls"]["mean"] == 6
    assert report["per_query"]["cost_usd"]["mean"] > 0
    assert report["per_query"]["latency_s"]["median"] > 0
    assert extras["by_type"]["all"]["pool_coverage"] == 100.0
