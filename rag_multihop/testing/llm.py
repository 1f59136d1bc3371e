"""Fake LLMs for tests: a plain-object transport, and an OpenAI-compatible server on
127.0.0.1 for code that talks HTTP (litellm, the frameworks' OpenAI clients)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

from rag_multihop.llm.transport import RawReply, StreamDelta

Reply: TypeAlias = str | RawReply | BaseException | Callable[[str], str | RawReply]
"""What :class:`FakeTransport` answers: a text, a whole :class:`RawReply`, an exception to
raise (a provider error: give it a ``status_code``), or a function of the prompt."""


class FakeTransport:
    """A plain-object LLM transport for tests: no network, no litellm.

    A request is answered by its prompt (the last message's content): the first key of
    ``replies`` found in the prompt picks the reply, else ``default``. With ``script`` the
    replies are played in order instead, one per attempt, the last one repeating (for retry
    tests). A text reply becomes a :class:`RawReply` with ``model`` and the usage given;
    streaming sends it word by word, then the finish reason and the usage.

    Args:
        replies: prompt marker -> :data:`Reply`, tried in order.
        default: the reply when no marker is in the prompt.
        script: replies played in order, regardless of the prompt.
        model, prompt_tokens, completion_tokens, cost: the usage a text reply reports.
        delay: seconds each request waits (to see concurrency).
        missing: credential variables :meth:`missing_credentials` reports as unset.

    Attributes:
        requests: every request, in order; ``api_keys``: the key each was sent with.
        in_flight, peak: requests running now, and the most at once.
    """

    def __init__(
        self,
        replies: Mapping[str, Reply] | None = None,
        *,
        default: Reply = "",
        script: Sequence[Reply] = (),
        model: str = "fake",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost: float | None = None,
        delay: float = 0.0,
        missing: Sequence[str] = (),
    ) -> None:
        self.replies = dict(replies or {})
        self.default = default
        self.script = list(script)
        self.model = model
        self.usage = (prompt_tokens, completion_tokens, cost)
        self.delay = delay
        self.missing = list(missing)
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str | None] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the protocol

    def check_model(self, model: str) -> None:
        return None

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return list(self.missing)

    def supports_response_schema(self, model: str) -> bool:
        return False

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self._enter()
        try:
            time.sleep(self.delay)
            return self._answer(request, api_key)
        finally:
            self._leave()

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self._enter()
        try:
            await asyncio.sleep(self.delay)
            return self._answer(request, api_key)
        finally:
            self._leave()

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        reply = self.complete(request, api_key=api_key, timeout=timeout)
        for i, word in enumerate((reply.text or "").split(" ")):
            yield StreamDelta((" " if i else "") + word, model=reply.model)
        yield StreamDelta(
            "", reply.finish_reason, reply.model, reply.prompt_tokens, reply.completion_tokens
        )

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        for delta in self.stream(request, api_key=api_key, timeout=timeout):
            yield delta

    # ------------------------------------------------------------------ for assertions

    def prompts(self) -> list[str]:
        """The prompt (last message's content) of every request, in order."""
        return [_prompt(request) for request in self.requests]

    # ------------------------------------------------------------------ inside

    def _reply_for(self, prompt: str) -> Reply:
        if self.script:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return next((r for marker, r in self.replies.items() if marker in prompt), self.default)

    def _answer(self, request: Mapping[str, Any], api_key: str | None) -> RawReply:
        prompt = _prompt(request)
        with self._lock:
            self.requests.append(dict(request))
            self.api_keys.append(api_key)
            reply = self._reply_for(prompt)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(prompt)
        if isinstance(reply, RawReply):
            return reply
        prompt_tokens, completion_tokens, cost = self.usage
        return RawReply(reply, "stop", None, self.model, prompt_tokens, completion_tokens, cost)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _prompt(request: Mapping[str, Any]) -> str:
    messages = request.get("messages") or [{}]
    return str(messages[-1].get("content") or "")


class FakeOpenAIServer:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (no model).

    Every ``POST`` is answered with ``reply(messages)``: as one JSON completion, or, when the
    request asks to stream, word by word as server-sent events, then the finish reason and a
    usage chunk, as OpenAI sends them. A request whose last message holds ``break_on`` gets
    two pieces, then the connection drops in the middle of the chunked body (a broken
    stream); one holding ``slow_on`` gets its pieces ``piece_seconds`` apart (an answer
    that takes a while). It records the request bodies.

    Args:
        reply: the answer text of a request's ``messages``.
        prompt_tokens, completion_tokens: the usage every reply reports.
        break_on: a text that breaks the stream of a request holding it.
        slow_on, piece_seconds: a text that slows the stream of a request holding it, and
            the pause before each of its pieces.

    Example:
        >>> import urllib.request
        >>> body = {"model": "m", "messages": [{"role": "user", "content": "Capital?"}]}
        >>> with FakeOpenAIServer(lambda messages: "Paris") as server:
        ...     request = urllib.request.Request(
        ...         server.url + "/chat/completions", json.dumps(body).encode()
        ...     )
        ...     reply = json.load(urllib.request.urlopen(request))
        >>> reply["choices"][0]["message"]["content"], server.requests == [body]
        ('Paris', True)
    """

    def __init__(
        self,
        reply: Callable[[list[dict[str, Any]]], str],
        *,
        prompt_tokens: int = 40,
        completion_tokens: int = 9,
        break_on: str | None = None,
        slow_on: str | None = None,
        piece_seconds: float = 0.5,
    ) -> None:
        self.reply = reply
        self.usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        self.break_on = break_on
        self.slow_on = slow_on
        self.piece_seconds = piece_seconds
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The ``/v1`` base URL (the ``api_base`` of a client); the server must be started."""
        if self._server is None:
            raise RuntimeError("the server is not started: call start() or use it in a with")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> str:
        """Serve on a free port in a daemon thread; returns :attr:`url`."""
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.url

    def shutdown(self) -> None:
        """Stop serving (requests in flight finish)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_owner: FakeOpenAIServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server_owner
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        owner.requests.append(request)
        messages = request.get("messages", [])
        text = owner.reply(messages)
        base = {
            "id": f"chatcmpl-fake-{len(owner.requests)}",
            "created": 1700000000,
            "model": request.get("model", ""),
        }
        if request.get("stream"):
            marker = owner.break_on
            last = json.dumps(messages[-1]) if messages else ""
            broken = marker is not None and marker in last
            slow = owner.slow_on is not None and owner.slow_on in last
            self._stream(text, base, broken, owner.piece_seconds if slow else 0.0)
            return
        message = {"role": "assistant", "content": text}
        body = json.dumps(
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": owner.usage,
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: dict[str, Any]) -> None:
        self._chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _stream(self, text: str, base: dict[str, Any], broken: bool, pause: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = {**base, "object": "chat.completion.chunk"}
        for i, word in enumerate(text.split(" ")):
            if broken and i == 2:
                self.wfile.write(b'FFFF\r\ndata: {"trunc')  # a chunk that never ends
                self.wfile.flush()
                self.close_connection = True
                return
            delta = {"content": (" " if i else "") + word}
            time.sleep(pause)
            self._event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        usage = {**chunk, "choices": [], "usage": self.server_owner.usage}
        self._chunk(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        self._chunk(b"")
