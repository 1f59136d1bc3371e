"""Token counts the provider did not report are marked as estimates, per call and in sums.

Two layers: plain fake transports (the client's bookkeeping) and litellm itself against a
scripted OpenAI-compatible server on 127.0.0.1 (litellm fills a stream without usage with
its own tokenizer estimate, and a reply without usage with zeros; both must be told apart
from the provider's own counts).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rag_multihop.llm import LLMAccount, LLMClient, LLMSettings
from rag_multihop.llm.transport import RawReply, StreamDelta

MODEL = "openai/gpt-4o-mini"


class ScriptedStream:
    """A streaming transport that yields ``deltas`` (no network)."""

    def __init__(self, deltas: list[StreamDelta]) -> None:
        self.deltas = deltas

    def check_model(self, model: str) -> None:
        pass

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def supports_response_schema(self, model: str) -> bool:
        return False

    def complete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        return RawReply("Paris.", model="m", prompt_tokens=9, completion_tokens=2)

    async def acomplete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        return self.complete(request, api_key=api_key, timeout=timeout)

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        yield from self.deltas

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        for delta in self.deltas:
            yield delta


TEXT = [StreamDelta("Par", model="m"), StreamDelta("is.", finish_reason="stop")]


def _streamed(deltas: list[StreamDelta]) -> LLMAccount:
    client = LLMClient(LLMSettings(MODEL), transport=ScriptedStream(deltas))
    stream = client.stream("Capital of France?")
    assert "".join(stream) == "Paris."
    assert stream.reply is not None
    return stream.reply.account


def test_a_usage_estimated_by_litellm_is_booked_as_an_estimate() -> None:
    account = _streamed(
        [*TEXT, StreamDelta(prompt_tokens=14, completion_tokens=5, usage_estimated=True)]
    )
    assert (account.prompt_tokens, account.completion_tokens) == (14, 5)
    assert account.estimated and account.estimated_calls == 1
    assert account.estimated_tokens == 19
    assert account.to_dict()["estimated"] is True


def test_a_stream_without_any_usage_counts_pieces_as_an_estimate() -> None:
    account = _streamed(TEXT)
    assert (account.prompt_tokens, account.completion_tokens) == (0, 2)
    assert account.estimated_calls == 1 and account.estimated_tokens == 2


def test_a_reported_usage_is_not_an_estimate() -> None:
    account = _streamed([*TEXT, StreamDelta(prompt_tokens=11, completion_tokens=3)])
    assert not account.estimated
    assert (account.estimated_calls, account.estimated_tokens) == (0, 0)
    assert account.to_dict()["estimated"] is False


def test_a_query_account_sums_estimated_and_reported_calls_honestly() -> None:
    estimated = _streamed(
        [*TEXT, StreamDelta(prompt_tokens=14, completion_tokens=5, usage_estimated=True)]
    )
    reported = _streamed([*TEXT, StreamDelta(prompt_tokens=11, completion_tokens=3)])
    total = sum([estimated, reported, LLMAccount(cache_hits=1)])
    assert isinstance(total, LLMAccount)
    assert (total.calls, total.estimated_calls) == (2, 1)
    assert (total.total_tokens, total.estimated_tokens) == (33, 19)
    data = total.to_dict()
    assert data["estimated"] is True and data["estimated_tokens"] == 19
    assert data["estimated_calls"] == 1


def test_the_client_total_keeps_the_estimate_marks() -> None:
    deltas = [*TEXT, StreamDelta(prompt_tokens=14, completion_tokens=5, usage_estimated=True)]
    client = LLMClient(LLMSettings(MODEL), transport=ScriptedStream(deltas))
    list(client.stream("Capital of France?"))
    client.complete("Capital of France?")
    assert (client.total.calls, client.total.estimated_calls) == (2, 1)
    assert client.total.estimated_tokens == 19


def test_the_async_stream_marks_estimates_too() -> None:
    deltas = [*TEXT, StreamDelta(prompt_tokens=14, completion_tokens=5, usage_estimated=True)]
    client = LLMClient(LLMSettings(MODEL), transport=ScriptedStream(deltas))

    async def run() -> LLMAccount:
        stream = client.astream("Capital of France?")
        async for _ in stream:
            pass
        assert stream.reply is not None
        return stream.reply.account

    assert asyncio.run(run()).estimated_calls == 1


# ----------------------------------------------------------- litellm against a local server


class _Server(BaseHTTPRequestHandler):
    """OpenAI-compatible replies, with or without a usage block (``usage`` class flag)."""

    usage = False
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        if body.get("stream"):
            pieces = ["Par", "is", " is the capital."]
            events = [
                {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": piece},
                            "finish_reason": "stop" if i == len(pieces) - 1 else None,
                        }
                    ],
                }
                for i, piece in enumerate(pieces)
            ]
            if self.usage:
                events.append({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                               "model": "m", "choices": [], "usage": usage})  # fmt: skip
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self._send(data.encode(), "text/event-stream")
            return
        reply: dict[str, Any] = {
            "id": "x",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Paris."},
                    "finish_reason": "stop",
                }
            ],
        }
        if self.usage:
            reply["usage"] = usage
        self._send(json.dumps(reply).encode(), "application/json")

    def _send(self, data: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def local_server() -> Iterator[str]:
    pytest.importorskip("litellm")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("reported", [False, True])
def test_litellm_streams_are_marked_by_whether_the_server_sent_usage(
    local_server: str, reported: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Server, "usage", reported)
    client = LLMClient(LLMSettings("openai/m", api_base=local_server, max_retries=0))
    stream = client.stream("What is the capital of France?")
    assert "".join(stream) == "Paris is the capital."
    assert stream.reply is not None
    account = stream.reply.account
    assert account.calls == 1 and account.total_tokens > 0
    assert account.estimated is not reported
    if reported:
        assert (account.prompt_tokens, account.completion_tokens) == (11, 3)
    else:  # litellm's tokenizer estimate, booked as one
        assert account.estimated_tokens == account.total_tokens

    async def run() -> LLMAccount:
        stream = client.astream("What is the capital of France?")
        async for _ in stream:
            pass
        assert stream.reply is not None
        return stream.reply.account

    assert asyncio.run(run()).estimated is not reported


@pytest.mark.parametrize("reported", [False, True])
def test_litellm_replies_without_usage_are_not_booked_as_reported(
    local_server: str, reported: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Server, "usage", reported)
    client = LLMClient(LLMSettings("openai/m", api_base=local_server, max_retries=0))
    account = client.complete("What is the capital of France?").account
    assert account.estimated is not reported
    assert account.total_tokens == (14 if reported else 0)
