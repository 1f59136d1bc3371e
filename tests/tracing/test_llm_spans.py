"""Every LLM call is one ``rag_multihop.llm.chat`` span with OpenTelemetry's GenAI attributes:
whole, streamed (sync and async, read to the end or abandoned), cached, retried, failed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_multihop.llm import LLMCache, LLMCallError, LLMClient, LLMSettings
from rag_multihop.testing import FakeTransport
from rag_multihop.tracing import enable_opentelemetry, remove_sink, span


class RateLimited(Exception):
    status_code = 429


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    sink = enable_opentelemetry(provider)
    yield exported
    remove_sink(sink)


def client(transport: FakeTransport) -> LLMClient:
    return LLMClient(LLMSettings("openai/gpt-4o-mini"), transport=transport)


def calls(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == "rag_multihop.llm.chat"]


def fake(script: list[str | BaseException] | None = None) -> FakeTransport:
    return FakeTransport(
        default="Paris is the capital.",
        script=script or (),
        prompt_tokens=12,
        completion_tokens=4,
        model="gpt-4o-mini-2024",
    )


def test_a_call_has_the_genai_request_and_usage(exporter: InMemorySpanExporter) -> None:
    with span("demo.stage"):
        client(fake()).complete("Capital of France?", max_tokens=20, temperature=0.2)
    [call] = calls(exporter)
    assert dict(call.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "openai/gpt-4o-mini",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 20,
        "gen_ai.response.model": "gpt-4o-mini-2024",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 4,
        "rag_multihop.llm.json": False,
        "rag_multihop.llm.cached": False,
        "rag_multihop.llm.retries": 0,
        "rag_multihop.llm.estimated": False,
    }
    [stage] = [s for s in exporter.get_finished_spans() if s.name == "rag_multihop.demo.stage"]
    assert call.parent is not None and call.parent.span_id == stage.context.span_id  # type: ignore[union-attr]


def test_retries_cache_hits_and_failures_are_on_the_span(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    cache = LLMCache(tmp_path / "cache.sqlite")
    retried = LLMClient(
        LLMSettings("openai/gpt-4o-mini", max_retries=2),
        transport=fake(script=[RateLimited("slow down"), "Paris."]),
        sleep=lambda _: None,
        cache=cache,
    )
    retried.complete("Capital of France?")
    retried.complete("Capital of France?")  # the cache answers
    first, second = calls(exporter)
    assert first.attributes["rag_multihop.llm.retries"] == 1  # type: ignore[index]
    assert first.attributes["rag_multihop.llm.cached"] is False  # type: ignore[index]
    assert second.attributes["rag_multihop.llm.cached"] is True  # type: ignore[index]
    assert second.attributes["gen_ai.usage.input_tokens"] == 0  # type: ignore[index]
    down = LLMClient(
        LLMSettings("openai/gpt-4o-mini", max_retries=0),
        transport=fake(script=[RateLimited("slow down")]),
    )
    with pytest.raises(LLMCallError):
        down.complete("Capital of France?")
    failed = calls(exporter)[-1]
    assert not failed.status.is_ok
    assert failed.attributes["error.type"] == "LLMCallError"  # type: ignore[index]
    assert "gen_ai.usage.input_tokens" not in (failed.attributes or {})


def test_a_stream_is_one_span_when_it_ends(exporter: InMemorySpanExporter) -> None:
    stream = client(fake()).stream("Capital of France?")
    with span("demo.stage"):
        text = "".join(stream)
    assert text == "Paris is the capital."
    [call] = calls(exporter)
    attributes = call.attributes or {}
    assert attributes["rag_multihop.llm.stream"] is True
    assert attributes["gen_ai.usage.output_tokens"] == stream.reply.account.completion_tokens  # type: ignore[union-attr]
    assert "rag_multihop.llm.abandoned" not in attributes
    assert call.end_time > call.start_time  # type: ignore[operator]

    async def read() -> str:
        pieces = client(fake()).astream("Capital of France?")
        return "".join([piece async for piece in pieces])

    assert asyncio.run(read()) == text
    assert [c.attributes["rag_multihop.llm.stream"] for c in calls(exporter)] == [True, True]  # type: ignore[index]


def test_an_abandoned_stream_says_so(exporter: InMemorySpanExporter) -> None:
    pieces = iter(client(fake()).stream("Capital of France?"))
    next(pieces)
    pieces.close()  # type: ignore[attr-defined]
    [call] = calls(exporter)
    assert call.attributes["rag_multihop.llm.abandoned"] is True  # type: ignore[index]
    assert "gen_ai.usage.output_tokens" not in (call.attributes or {})
