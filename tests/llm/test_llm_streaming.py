"""Streaming, schema-constrained JSON requests and LLMClient.run, with plain fake transports."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

from rag_multihop.llm import LLMCallError, LLMClient, LLMConfigError, LLMSettings, ProviderError
from rag_multihop.llm.cache import LLMCache
from rag_multihop.llm.prompts import JudgeScore
from rag_multihop.llm.transport import RawReply, StreamDelta


class Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


class FakeStreaming:
    """A streaming transport: ``script`` is a list of attempts, each a list of deltas or
    an exception raised before (or, with ``break_after``, after) some deltas."""

    def __init__(
        self,
        deltas: list[StreamDelta],
        *,
        fail_first: int = 0,
        break_after: int | None = None,
        schemas: bool = False,
    ) -> None:
        self.deltas = deltas
        self.fail_first = fail_first
        self.break_after = break_after
        self.schemas = schemas
        self.requests: list[Mapping[str, Any]] = []

    def check_model(self, model: str) -> None:
        pass

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def supports_response_schema(self, model: str) -> bool:
        return self.schemas

    def complete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        self.requests.append(request)
        return RawReply('{"score": 7}', model="m", prompt_tokens=3, completion_tokens=2)

    async def acomplete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        return self.complete(request, api_key=api_key, timeout=timeout)

    def _script(self) -> list[StreamDelta]:
        if self.fail_first:
            self.fail_first -= 1
            raise Status(503)
        return self.deltas

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        self.requests.append(request)
        for i, delta in enumerate(self._script()):
            if self.break_after is not None and i == self.break_after:
                raise Status(502)
            yield delta

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        for delta in self.stream(request, api_key=api_key, timeout=timeout):
            yield delta


DELTAS = [
    StreamDelta("The ", model="m"),
    StreamDelta("answer", model="m"),
    StreamDelta(" is 4.", finish_reason="stop", model="m"),
    StreamDelta(prompt_tokens=12, completion_tokens=3, model="m"),
]


def client(transport: Any, **settings: Any) -> LLMClient:
    return LLMClient(
        LLMSettings("openai/gpt-4o-mini", backoff_base=0, **settings),
        transport=transport,
        sleep=lambda _: None,
    )


def test_stream_yields_pieces_then_a_complete_reply() -> None:
    llm = client(FakeStreaming(DELTAS))
    stream = llm.stream("What is 2 + 2?")
    assert stream.reply is None
    assert list(stream) == ["The ", "answer", " is 4."]
    assert stream.reply is not None
    assert stream.reply.text == "The answer is 4."
    assert stream.reply.finish_reason == "stop"
    account = stream.reply.account
    assert (account.calls, account.prompt_tokens, account.completion_tokens) == (1, 12, 3)
    assert llm.total.calls == 1


def test_astream_matches_stream() -> None:
    llm = client(FakeStreaming(DELTAS))

    async def collect() -> tuple[list[str], Any]:
        stream = llm.astream("What is 2 + 2?")
        return [piece async for piece in stream], stream.reply

    pieces, reply = asyncio.run(collect())
    assert "".join(pieces) == reply.text == "The answer is 4."
    assert reply.account.total_tokens == 15


def test_without_usage_pieces_are_counted() -> None:
    stream = client(FakeStreaming(DELTAS[:3])).stream("What is 2 + 2?")
    list(stream)
    assert stream.reply is not None
    assert (stream.reply.account.prompt_tokens, stream.reply.account.completion_tokens) == (0, 3)


def test_failures_before_the_first_piece_are_retried() -> None:
    llm = client(FakeStreaming(DELTAS, fail_first=2), max_retries=2)
    stream = llm.stream("What is 2 + 2?")
    assert "".join(stream) == "The answer is 4."
    assert stream.reply is not None and stream.reply.account.retries == 2


def test_a_stream_that_breaks_midway_raises_a_clear_error() -> None:
    stream = client(FakeStreaming(DELTAS, break_after=2), max_retries=3).stream("Q?")
    received = []
    with pytest.raises(LLMCallError, match=r"stream from 'openai/gpt-4o-mini' broke after 2"):
        for piece in stream:
            received.append(piece)
    assert received == ["The ", "answer"]


def test_a_cached_reply_streams_as_one_piece(tmp_path) -> None:
    cache = LLMCache(tmp_path / "replies.sqlite")
    first = LLMClient("openai/gpt-4o-mini", transport=FakeStreaming(DELTAS), cache=cache)
    assert "".join(first.stream("Q?")) == "The answer is 4."
    transport = FakeStreaming([])
    again = LLMClient("openai/gpt-4o-mini", transport=transport, cache=cache).stream("Q?")
    assert list(again) == ["The answer is 4."]
    assert again.reply is not None and again.reply.cached and not transport.requests


def test_a_transport_that_cannot_stream_is_named() -> None:
    class CompleteOnly:
        def check_model(self, model: str) -> None:
            pass

        def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
            return []

        def complete(self, request, *, api_key, timeout):
            return RawReply("x")

        async def acomplete(self, request, *, api_key, timeout):
            return RawReply("x")

    with pytest.raises(LLMConfigError, match="CompleteOnly cannot stream"):
        list(client(CompleteOnly()).stream("Q?"))


@pytest.mark.parametrize(
    ("schemas", "setting", "expected"),
    [
        (True, None, "json_schema"),
        (False, None, "json_object"),
        (False, True, "json_schema"),
        (True, False, "json_object"),
    ],
)
def test_json_calls_send_the_schema_when_the_provider_decodes_under_it(
    schemas: bool, setting: bool | None, expected: str
) -> None:
    transport = FakeStreaming([], schemas=schemas)
    reply = client(transport, json_schema=setting).complete_json("Score it.", JudgeScore)
    assert reply.value.score == 7
    response_format = transport.requests[0]["response_format"]
    assert response_format["type"] == expected
    if expected == "json_schema":
        schema = response_format["json_schema"]["schema"]
        assert schema["properties"]["score"]["enum"] == list(range(11))


def test_json_mode_off_sends_no_response_format() -> None:
    transport = FakeStreaming([], schemas=True)
    client(transport, json_mode=False).complete_json("Score it.", JudgeScore)
    assert "response_format" not in transport.requests[0]


def test_run_executes_a_coroutine_and_refuses_inside_a_running_loop() -> None:
    llm = client(FakeStreaming(DELTAS))
    assert llm.run(llm.acomplete("Q?")).text == '{"score": 7}'

    async def inside() -> None:
        with pytest.raises(RuntimeError, match=r"await client\.acomplete"):
            llm.run(llm.acomplete("Q?"))

    asyncio.run(inside())
    llm.close()


@pytest.mark.parametrize("value", ["yes", 1])
def test_json_schema_setting_is_validated(value: Any) -> None:
    with pytest.raises(ValueError, match="json_schema must be True, False or None"):
        LLMSettings("openai/gpt-4o-mini", json_schema=value)


class Trickle(FakeStreaming):
    """A provider that trickles one piece every ``gap`` seconds, forever (after ``first``
    seconds of silence). ``open`` counts the streams started and not yet closed. A guard
    ends a stream after ``GUARD_S``, so a stream that is not cut fails the test, not hangs it."""

    GUARD_S = 2.0

    def __init__(self, *, gap: float = 0.02, first: float = 0.0) -> None:
        super().__init__([])
        self.gap, self.first = gap, first
        self.open = 0

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        self.requests.append(request)
        self.open += 1
        try:
            guard = time.monotonic() + self.GUARD_S
            time.sleep(self.first)
            while time.monotonic() < guard:
                yield StreamDelta("tick ", model="m")
                time.sleep(self.gap)
        finally:
            self.open -= 1

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        self.requests.append(request)
        self.open += 1
        try:
            guard = time.monotonic() + self.GUARD_S
            await asyncio.sleep(self.first)
            while time.monotonic() < guard:
                yield StreamDelta("tick ", model="m")
                await asyncio.sleep(self.gap)
        finally:
            self.open -= 1


STILL_STREAMING = (
    r"stream from 'openai/gpt-4o-mini' timed out after \d+ piece\(s\): StreamTimeout: the "
    r"reply was still streaming after \d+\.\d\d s of waiting for it, past the timeout of 0\.3 s"
)


def test_a_reply_that_keeps_streaming_ends_at_the_timeout() -> None:
    transport = Trickle()
    stream = client(transport, timeout=0.3, max_retries=2).stream("Q?")
    pieces: list[str] = []
    start = time.monotonic()
    with pytest.raises(LLMCallError, match=STILL_STREAMING) as info:
        for piece in stream:
            pieces.append(piece)
    assert time.monotonic() - start < 1.0
    assert pieces and info.value.attempts == 1  # pieces were delivered: no retry
    assert transport.open == 0 and stream.reply is None  # the provider's stream is closed


def test_an_async_reply_that_keeps_streaming_ends_at_the_timeout() -> None:
    transport = Trickle()

    async def read() -> None:
        stream = client(transport, timeout=0.3).astream("Q?")
        start = time.monotonic()
        with pytest.raises(LLMCallError, match=STILL_STREAMING):
            async for _ in stream:
                pass
        assert time.monotonic() - start < 1.0
        assert transport.open == 0  # closed at once, not when the loop shuts down

    asyncio.run(read())


def test_an_async_stream_silent_before_its_first_piece_is_cancelled_and_retried() -> None:
    transport = Trickle(first=10.0)

    async def read() -> None:
        stream = client(transport, timeout=0.3, max_retries=1).astream("Q?")
        start = time.monotonic()
        with pytest.raises(
            LLMCallError,
            match=r"failed after 2 attempt.*StreamTimeout: no reply within the timeout of 0\.3 s",
        ):
            async for _ in stream:
                pass
        assert time.monotonic() - start < 1.5
        assert transport.open == 0 and len(transport.requests) == 2

    asyncio.run(read())


def test_the_timeout_leaves_out_the_readers_own_time() -> None:
    stream = client(FakeStreaming(DELTAS), timeout=0.3).stream("Q?")
    for _ in stream:
        time.sleep(0.15)  # 0.45 s in the reader's loop, more than the timeout
    assert stream.reply is not None and stream.reply.text == "The answer is 4."


def test_a_stream_breaking_with_a_key_in_its_error_keeps_the_key_out_of_tracebacks() -> None:
    key = "sk-proj-" + "a1B2" * 10

    class Echoing(FakeStreaming):
        def stream(self, request, *, api_key, timeout):
            yield StreamDelta("The ", model="m")
            error = Status(502)
            error.args = (f"HTTP 502 from a proxy: Authorization: Bearer {key}",)
            raise error from ValueError(f"upstream request with api_key={key}")

    with pytest.raises(LLMCallError, match="broke after 1 piece") as info:
        list(client(Echoing([])).stream("Q?"))
    text = "".join(traceback.format_exception(info.value))
    assert key not in text
    assert (
        "ProviderError: tests.llm.test_llm_streaming.Status: HTTP 502 from a proxy: "
        "Authorization: Bearer [redacted]" in text
    )
    assert isinstance(info.value.__cause__, ProviderError) and info.value.__context__ is None
