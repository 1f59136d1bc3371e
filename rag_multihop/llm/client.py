"""The LLM client every LLM-driven part of the package uses.

:class:`LLMSettings` holds the configuration (serialisable; never the API key) and
:class:`LLMClient` makes the calls:

- any litellm provider by model string (``openai/...``, ``anthropic/...``, ``ollama/...``,
  or ``openai/<served-model>`` with ``api_base`` for vLLM and llama.cpp servers);
- the API key read from the environment at call time (``api_key_env``, else the provider's
  own variable such as ``OPENAI_API_KEY``); a missing key raises
  :class:`~rag_multihop.llm.errors.LLMConfigError` naming the variable;
- an explicit ``timeout`` and bounded retries with exponential backoff and jitter on rate
  limits (429), server errors (5xx), timeouts and connection errors, honouring
  ``Retry-After``; litellm's own retries are off;
- sync and async calls, with at most ``max_concurrency`` requests in flight per client, and
  :meth:`LLMClient.map_async` / :meth:`LLMClient.run_batch` for batches;
- JSON replies validated against pydantic models, with one documented fallback;
- an optional on-disk cache (:class:`~rag_multihop.llm.cache.LLMCache`) and an
  :class:`~rag_multihop.llm.accounting.LLMAccount` on every reply.

Malformed-reply fallback (:meth:`LLMClient.complete_json`): a reply that is not a JSON
object or fails the schema gets exactly one repair attempt (the conversation, the bad reply
and the validation error are sent back with a request for JSON only). If that fails too, or
the provider refused (no repair for refusals), the call raises
:class:`~rag_multihop.llm.errors.LLMOutputError`; a caller that passed ``default=`` gets its
neutral value instead, in a :class:`JSONReply` with ``fallback=True`` and the error attached,
and a warning is logged. A wrong value is never returned silently.

Example (an offline fake transport; real use needs no ``transport=``):
    >>> from rag_multihop.llm.transport import RawReply
    >>> class Fake:
    ...     def check_model(self, model): pass
    ...     def missing_credentials(self, model, api_base): return []
    ...     def complete(self, request, *, api_key, timeout):
    ...         return RawReply('{"score": 8}', model="m", prompt_tokens=40, completion_tokens=5)
    ...     async def acomplete(self, request, *, api_key, timeout):
    ...         return self.complete(request, api_key=api_key, timeout=timeout)
    >>> from rag_multihop.llm.prompts import JudgeScore
    >>> client = LLMClient(LLMSettings("openai/gpt-4o-mini", timeout=30), transport=Fake())
    >>> reply = client.complete_json("Score it as JSON.", JudgeScore)
    >>> reply.value.score, reply.account.calls, reply.account.total_tokens
    (8.0, 1, 45)
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing, asynccontextmanager, closing
from dataclasses import replace
from typing import Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel

from rag_multihop.llm._loop import LoopThread, loop_running
from rag_multihop.llm.accounting import LLMAccount
from rag_multihop.llm.cache import LLMCache, cache_key
from rag_multihop.llm.chat import ChatModel, ChatTransport
from rag_multihop.llm.errors import (
    LLMCallError,
    LLMConfigError,
    LLMError,
    LLMOutputError,
    ProviderError,
)
from rag_multihop.llm.local import is_local_model
from rag_multihop.llm.local_transport import default_transport
from rag_multihop.llm.prompts import format_repair
from rag_multihop.llm.replies import JSONReply, LLMReply
from rag_multihop.llm.retry import backoff, classify
from rag_multihop.llm.settings import LLMSettings
from rag_multihop.llm.spans import (
    SPAN,
    reply_attributes,
    request_attributes,
    traced_astream,
    traced_stream,
)
from rag_multihop.llm.streaming import (
    AsyncTextStream,
    Collected,
    StreamTimeout,
    TextStream,
    abounded,
    bounded,
)
from rag_multihop.llm.structured import parse_reply
from rag_multihop.llm.transport import RawReply, StreamingTransport, Transport
from rag_multihop.secrets import redact_secrets
from rag_multihop.tracing import span
from rag_multihop.validation import check_int, check_number, loggable

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
R = TypeVar("R")

Messages = str | Sequence[Mapping[str, str]]
"""A user prompt, or chat messages ``{"role": "system" | "user" | "assistant", "content": ...}``."""

PLACEHOLDER_API_KEY = "sk-no-key-required"
"""Sent to an ``api_base`` server when no key variable is set (local servers ignore it)."""

JSON_OBJECT: dict[str, str] = {"type": "json_object"}
"""The response format of JSON calls when the schema is not sent."""

_ROLES = frozenset({"system", "user", "assistant"})


class _Missing(enum.Enum):
    MISSING = enum.auto()


MISSING = _Missing.MISSING


class LLMClient:
    """Calls one model with retries, bounded concurrency, an optional cache and accounting.

    Args:
        settings: an :class:`LLMSettings`, or just a model string.
        cache: an :class:`~rag_multihop.llm.cache.LLMCache`; ``None`` disables caching.
        transport: makes single attempts; default
            :func:`~rag_multihop.llm.local_transport.default_transport`: a
            :class:`~rag_multihop.llm.local_transport.LocalTransport` for ``local[/name]``
            (it starts and addresses the embedded server), else :class:`LiteLLMTransport`.
        sleep, async_sleep: how to wait between retries (injectable for tests).
        rng: source of backoff jitter (seeded for reproducible waits).

    The constructor is cheap: litellm is imported on the first call that misses the cache.
    Use the client as a context manager (or call :meth:`close`) when :meth:`run_batch` was
    used, to close its event loop.
    """

    def __init__(
        self,
        settings: LLMSettings | str,
        *,
        cache: LLMCache | None = None,
        transport: Transport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = LLMSettings(settings) if isinstance(settings, str) else settings
        if not isinstance(self.settings, LLMSettings):
            raise TypeError(f"settings must be LLMSettings or a model string, got {settings!r}")
        self.cache = cache
        self.transport: Transport = (
            transport if transport is not None else default_transport(self.settings.model)
        )
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._total = LLMAccount()
        self._thread_slots = threading.BoundedSemaphore(self.settings.concurrency)
        self._loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._loop_slots = weakref.WeakKeyDictionary()
        self._loop_thread: LoopThread | None = None

    @classmethod
    def from_chat(
        cls, chat: ChatModel, *, cache: LLMCache | None = None, **settings: Any
    ) -> LLMClient:
        """A client whose model is ``chat``, a :class:`~rag_multihop.llm.chat.ChatModel`
        (a framework's LLM object, wrapped), through a
        :class:`~rag_multihop.llm.chat.ChatTransport`: timeout, retries, concurrency, cache
        and accounting as for any model (what applies is listed in :mod:`.chat`).
        ``settings`` are :class:`LLMSettings` fields (``timeout``, ``max_retries``,
        ``max_concurrency``, prices...); the model is the object's ``model_id``.
        """
        transport = ChatTransport(chat)
        return cls(
            LLMSettings(transport.chat.model_id, **settings), cache=cache, transport=transport
        )

    def __repr__(self) -> str:
        return f"LLMClient({self.settings!r}, cache={self.cache!r})"

    @property
    def total(self) -> LLMAccount:
        """Everything this client has spent so far (thread-safe running sum)."""
        with self._lock:
            return self._total

    # ------------------------------------------------------------------ text calls

    def complete(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> LLMReply:
        """One reply to ``messages``; ``None`` arguments mean "use the settings' value".

        ``json_mode`` asks for a JSON object (when the settings' ``json_mode`` allows it);
        :meth:`complete_json` sets it.

        Raises :class:`LLMConfigError` (unknown model, missing or rejected key, model not
        served) or :class:`LLMCallError` (provider failure after the retry budget).
        """
        return self._complete(self._request(messages, temperature, max_tokens, json_mode))

    def _complete(self, request: dict[str, Any]) -> LLMReply:
        with span(SPAN, request_attributes(request)) as record:
            reply = self._complete_untraced(request)
            record.set_attributes(reply_attributes(reply))
        return reply

    def _complete_untraced(self, request: dict[str, Any]) -> LLMReply:
        key = cache_key(request) if self.cache is not None else None
        cached = self._from_cache(key)
        if cached is not None:
            return cached
        sent, api_key = self._prepare(request)
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                with self._thread_slots:
                    raw = self.transport.complete(
                        sent, api_key=api_key, timeout=self.settings.call_timeout
                    )
                break
            except Exception as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
                self._sleep(delay)
                attempt += 1
        return self._finish(raw, key, attempt, time.perf_counter() - start)

    async def acomplete(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> LLMReply:
        """The async twin of :meth:`complete`; waits for a free slot of ``max_concurrency``."""
        return await self._acomplete(self._request(messages, temperature, max_tokens, json_mode))

    async def _acomplete(self, request: dict[str, Any]) -> LLMReply:
        with span(SPAN, request_attributes(request)) as record:
            reply = await self._acomplete_untraced(request)
            record.set_attributes(reply_attributes(reply))
        return reply

    async def _acomplete_untraced(self, request: dict[str, Any]) -> LLMReply:
        key = cache_key(request) if self.cache is not None else None
        cached = self._from_cache(key)
        if cached is not None:
            return cached
        sent, api_key = self._prepare(request)
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                async with self._slot():
                    raw = await self.transport.acomplete(
                        sent, api_key=api_key, timeout=self.settings.call_timeout
                    )
                break
            except Exception as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
                await self._async_sleep(delay)
                attempt += 1
        return self._finish(raw, key, attempt, time.perf_counter() - start)

    # ------------------------------------------------------------------ JSON calls

    def complete_json(
        self,
        messages: Messages,
        schema: type[M],
        *,
        default: M | Literal[_Missing.MISSING] = MISSING,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> JSONReply[M]:
        """A reply validated as ``schema``, with the module's one-repair fallback.

        Without ``default`` an unusable reply raises :class:`LLMOutputError` (its
        ``account`` holds what the attempts cost); with it, the default comes back in a
        reply with ``fallback=True``.
        """
        first = self._complete(self._request(messages, temperature, max_tokens, True, schema))
        parsed = self._parse(first, schema, first.account, repaired=False)
        if isinstance(parsed, JSONReply):
            return parsed
        if parsed.reason == "refused":
            return self._give_up(parsed, default)
        repair = format_repair(_as_messages(messages), first.text, str(parsed), schema)
        second = self._complete(self._request(repair, temperature, max_tokens, True, schema))
        repaired = self._parse(second, schema, first.account + second.account, repaired=True)
        return repaired if isinstance(repaired, JSONReply) else self._give_up(repaired, default)

    async def acomplete_json(
        self,
        messages: Messages,
        schema: type[M],
        *,
        default: M | Literal[_Missing.MISSING] = MISSING,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> JSONReply[M]:
        """The async twin of :meth:`complete_json`."""
        request = self._request(messages, temperature, max_tokens, True, schema)
        first = await self._acomplete(request)
        parsed = self._parse(first, schema, first.account, repaired=False)
        if isinstance(parsed, JSONReply):
            return parsed
        if parsed.reason == "refused":
            return self._give_up(parsed, default)
        repair = format_repair(_as_messages(messages), first.text, str(parsed), schema)
        repair_request = self._request(repair, temperature, max_tokens, True, schema)
        second = await self._acomplete(repair_request)
        repaired = self._parse(second, schema, first.account + second.account, repaired=True)
        return repaired if isinstance(repaired, JSONReply) else self._give_up(repaired, default)

    # ------------------------------------------------------------------ streaming

    def stream(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> TextStream:
        """A text reply streamed as it is generated: iterate the returned
        :class:`TextStream` for text pieces; its ``reply`` (text, finish reason and the
        complete account) is set when the stream ends.

        The settings' ``timeout`` bounds each attempt's whole reply: the time spent waiting
        for its pieces (not the time your loop takes between them), so a reply that keeps
        trickling in ends with a timeout. Failures before the first piece, timeouts
        included, are retried like :meth:`complete`; a stream that breaks or times out after
        pieces were delivered raises :class:`LLMCallError` (the pieces cannot be taken
        back). A cached reply arrives as one piece.
        """
        request = self._request(messages, temperature, max_tokens, False)
        return TextStream(traced_stream(self._stream_pieces(request), request))

    def astream(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncTextStream:
        """The async twin of :meth:`stream` (``async for piece in client.astream(...)``)."""
        request = self._request(messages, temperature, max_tokens, False)
        return AsyncTextStream(traced_astream(self._astream_pieces(request), request))

    def _streaming(self) -> StreamingTransport:
        if not isinstance(self.transport, StreamingTransport):
            raise LLMConfigError(
                f"the transport {type(self.transport).__name__} cannot stream; use "
                "complete() or a transport with stream()/astream() (LiteLLMTransport has them)"
            )
        return self.transport

    def _stream_pieces(self, request: dict[str, Any]) -> Iterator[str | LLMReply]:
        key = cache_key(request) if self.cache is not None else None
        cached = self._from_cache(key)
        if cached is not None:
            if cached.text:
                yield cached.text
            yield cached
            return
        transport = self._streaming()
        sent, api_key = self._prepare(request)
        start = time.perf_counter()
        attempt = 0
        collected = Collected()
        timeout = self.settings.call_timeout
        while True:
            try:
                with self._thread_slots:
                    deltas = transport.stream(sent, api_key=api_key, timeout=timeout)
                    with closing(bounded(deltas, timeout)) as timed:
                        for delta in timed:
                            if collected.add(delta):
                                yield delta.text
                break
            except Exception as exc:
                delay = self._stream_retry_delay(exc, attempt, collected)
                if delay is None:
                    raise
                self._sleep(delay)
                attempt += 1
        seconds = time.perf_counter() - start
        yield self._finish(collected.raw(), key, attempt, seconds)

    async def _astream_pieces(self, request: dict[str, Any]) -> AsyncIterator[str | LLMReply]:
        key = cache_key(request) if self.cache is not None else None
        cached = self._from_cache(key)
        if cached is not None:
            if cached.text:
                yield cached.text
            yield cached
            return
        transport = self._streaming()
        sent, api_key = self._prepare(request)
        start = time.perf_counter()
        attempt = 0
        collected = Collected()
        timeout = self.settings.call_timeout
        while True:
            try:
                async with self._slot():
                    deltas = transport.astream(sent, api_key=api_key, timeout=timeout)
                    async with aclosing(abounded(deltas, timeout)) as timed:
                        async for delta in timed:
                            if collected.add(delta):
                                yield delta.text
                break
            except Exception as exc:
                delay = self._stream_retry_delay(exc, attempt, collected)
                if delay is None:
                    raise
                await self._async_sleep(delay)
                attempt += 1
        seconds = time.perf_counter() - start
        yield self._finish(collected.raw(), key, attempt, seconds)

    def _stream_retry_delay(
        self, exc: Exception, attempt: int, collected: Collected
    ) -> float | None:
        if collected.pieces:
            ended = "timed out" if isinstance(exc, StreamTimeout) else "broke"
            _raise_from(
                LLMCallError(
                    f"the stream from {self.settings.model!r} {ended} after "
                    f"{len(collected.pieces)} piece(s): {type(exc).__name__}: "
                    f"{redact_secrets(str(exc))}",
                    model=self.settings.model,
                    attempts=attempt + 1,
                ),
                exc,
            )
        return self._retry_delay(exc, attempt)

    # ------------------------------------------------------------------ batches

    async def map_async(
        self,
        fn: Callable[[T], Awaitable[R]],
        items: Iterable[T],
        *,
        limit: int | None = None,
    ) -> list[R]:
        """``[await fn(item) for item in items]``, run concurrently; results in input order.

        At most ``limit`` items (default ``max_concurrency``) are in progress at once, and
        the client's own bound on requests in flight still holds inside ``fn``. The first
        error cancels the remaining items and propagates.
        """
        bound = check_int(self.settings.concurrency if limit is None else limit, "limit", low=1)
        slots = asyncio.Semaphore(bound)

        async def one(item: T) -> R:
            async with slots:
                return await fn(item)

        tasks = [asyncio.ensure_future(one(item)) for item in items]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def run_batch(
        self,
        fn: Callable[[T], Awaitable[R]],
        items: Iterable[T],
        *,
        limit: int | None = None,
    ) -> list[R]:
        """:meth:`map_async` from synchronous code, through :meth:`run`. Inside a running
        event loop, ``await client.map_async(...)`` instead."""
        if loop_running():
            raise RuntimeError(
                "run_batch() cannot be called from a running event loop; "
                "use `await client.map_async(fn, items)` instead"
            )
        return self.run(self.map_async(fn, items, limit=limit))

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run one coroutine (such as ``client.acomplete(...)`` or a method's ``arun``) to
        completion from synchronous code, on the event loop the client keeps.

        The loop runs in a background thread, started on first use and reused by later
        calls (from any thread), which keeps litellm's per-loop HTTP clients and logging
        worker alive between calls. Inside a running event loop, ``await`` the coroutine
        instead (this raises ``RuntimeError`` saying so).
        """
        if loop_running():
            coroutine.close()
            raise RuntimeError(
                "LLMClient.run() cannot be called from a running event loop; await the coroutine "
                "instead (e.g. `await client.acomplete(...)`, `await retriever.arun(...)`)"
            )
        with self._lock:
            if self._loop_thread is None:
                self._loop_thread = LoopThread()
                weakref.finalize(self, self._loop_thread.stop)
            loop_thread = self._loop_thread
        return loop_thread.run(coroutine)

    def close(self) -> None:
        """Stop the event loop of :meth:`run_batch` (a later batch starts a new one)."""
        with self._lock:
            loop_thread, self._loop_thread = self._loop_thread, None
        if loop_thread is not None:
            loop_thread.stop()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _request(
        self,
        messages: Messages,
        temperature: float | None,
        max_tokens: int | None,
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> dict[str, Any]:
        """The request as cached: the model as configured (``local`` stays ``local``)."""
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": _as_messages(messages),
            "temperature": s.temperature
            if temperature is None
            else check_number(temperature, "temperature", low=0, high=2),
        }
        tokens = s.max_tokens if max_tokens is None else check_int(max_tokens, "max_tokens", low=1)
        if tokens is not None:
            request["max_tokens"] = tokens
        if json_mode and s.json_mode:
            request["response_format"] = (
                _schema_format(schema)
                if schema is not None and self._uses_schema()
                else JSON_OBJECT
            )
        if s.api_base is not None:
            request["api_base"] = s.api_base
        return request

    def _uses_schema(self) -> bool:
        """Whether JSON calls send their schema (see ``LLMSettings.json_schema``)."""
        s = self.settings
        if s.json_schema is not None:
            return s.json_schema
        if isinstance(self.transport, StreamingTransport):
            return self.transport.supports_response_schema(s.model)
        return False

    def _prepare(self, request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The request as sent and the API key, both resolved at call time (the key is
        never stored; the local model's transport sends its server's own key)."""
        s = self.settings
        self.transport.check_model(s.model)
        if s.api_key_env is not None:
            value = os.environ.get(s.api_key_env, "").strip()
            if not value:
                raise LLMConfigError(
                    f"no API key for {s.model!r}: the environment variable {s.api_key_env} "
                    f"(api_key_env) is not set; export {s.api_key_env}=<key>, or use the "
                    "method's LLM-free mode"
                )
            return request, value
        missing = self.transport.missing_credentials(s.model, s.api_base)
        if not missing:
            return request, None  # the provider reads its own variable, or needs none
        if s.api_base is not None:
            logger.debug("no %s set; sending a placeholder key to %s", missing[0], s.api_base)
            return request, PLACEHOLDER_API_KEY
        raise LLMConfigError(
            f"no API key for {s.model!r}: set the environment variable "
            f"{' or '.join(missing)}, or set api_key_env to the variable that holds the key, "
            "or use the method's LLM-free mode"
        )

    def _retry_delay(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying (see :mod:`.retry`), or raise the typed error;
        ``None``: not a provider error, let it through."""
        s = self.settings
        failure = classify(exc)
        if failure.kind == "not_a_provider_error":
            return None
        if failure.kind == "bad_key":
            key_source = s.api_key_env or "the provider's API key variable"
            _raise_from(
                LLMConfigError(
                    f"the provider rejected the API key for {s.model!r} "
                    f"(HTTP {failure.status}); check {key_source}"
                ),
                exc,
            )
        if failure.kind == "no_model":
            _raise_from(
                LLMConfigError(
                    f"the provider does not serve model {s.model!r} (HTTP 404); check the "
                    f"model name{' and api_base' if s.api_base else ''}"
                ),
                exc,
            )
        if failure.kind == "rejected":
            _raise_from(
                LLMCallError(
                    f"{s.model!r} rejected the request (HTTP {failure.status}): "
                    f"{redact_secrets(str(exc))}",
                    model=s.model,
                    attempts=attempt + 1,
                ),
                exc,
            )
        if attempt >= s.retries:
            _raise_from(
                LLMCallError(
                    f"{s.model!r} failed after {attempt + 1} attempt(s) (max_retries="
                    f"{s.max_retries}, timeout={s.timeout:g} s); last error: "
                    f"{type(exc).__name__}: {redact_secrets(str(exc))}",
                    model=s.model,
                    attempts=attempt + 1,
                ),
                exc,
            )
        delay = backoff(
            attempt,
            failure.retry_after,
            base=s.backoff_base,
            cap=s.backoff_max,
            jitter=self._rng.random(),
        )
        logger.warning(
            "LLM call to %s failed (%s); retry %d of %d in %.2f s",
            s.model,
            type(exc).__name__,
            attempt + 1,
            s.max_retries,
            delay,
        )
        with self._lock:
            self._total = self._total + LLMAccount(retries=1)
        return delay

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._loop_slots.get(loop)
            if semaphore is None:
                semaphore = asyncio.Semaphore(self.settings.concurrency)
                self._loop_slots[loop] = semaphore
        async with semaphore:
            yield

    def _from_cache(self, key: str | None) -> LLMReply | None:
        if self.cache is None or key is None:
            return None
        payload = self.cache.get(key)
        if payload is None:
            return None
        raw = RawReply.from_payload(payload)
        account = LLMAccount(cache_hits=1)
        with self._lock:
            self._total = self._total + account
        return LLMReply(
            text=raw.text,
            model=raw.model,
            account=account,
            finish_reason=raw.finish_reason,
            refusal=raw.refusal,
            cached=True,
        )

    def _finish(self, raw: RawReply, key: str | None, retries: int, seconds: float) -> LLMReply:
        s = self.settings
        cost = 0.0 if is_local_model(s.model) else raw.cost
        if s.input_cost_per_token is not None and s.output_cost_per_token is not None:
            cost = (
                raw.prompt_tokens * s.input_cost_per_token
                + raw.completion_tokens * s.output_cost_per_token
            )
        account = LLMAccount(
            calls=1,
            retries=retries,
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            cost=cost,
            wall_time_s=seconds,
            estimated_calls=int(raw.usage_estimated),
            estimated_tokens=(
                raw.prompt_tokens + raw.completion_tokens if raw.usage_estimated else 0
            ),
        )
        with self._lock:  # retries were counted into the total as they happened
            self._total = self._total + replace(account, retries=0)
        if self.cache is not None and key is not None:
            self.cache.put(key, raw.to_payload())
        return LLMReply(
            text=raw.text,
            model=raw.model,
            account=account,
            finish_reason=raw.finish_reason,
            refusal=raw.refusal,
        )

    @staticmethod
    def _parse(
        reply: LLMReply, schema: type[M], account: LLMAccount, *, repaired: bool
    ) -> JSONReply[M] | LLMOutputError:
        try:
            value = parse_reply(
                reply.text, schema, refusal=reply.refusal, finish_reason=reply.finish_reason
            )
        except LLMOutputError as exc:
            exc.account = account
            if not repaired and exc.reason != "refused":
                logger.info(
                    "unusable %s reply (%s); one repair attempt",
                    schema.__name__,
                    loggable(exc, 500),
                )
            return exc
        return JSONReply(value=value, account=account, raw=reply.text, repaired=repaired)

    @staticmethod
    def _give_up(error: LLMOutputError, default: M | Literal[_Missing.MISSING]) -> JSONReply[M]:
        if default is MISSING:
            raise error
        logger.warning(
            "using the caller's default after an unusable LLM reply: %s", loggable(error, 500)
        )
        return JSONReply(
            value=default, account=error.account, raw=error.raw, fallback=True, error=error
        )


def _raise_from(error: LLMError, exc: BaseException) -> NoReturn:
    """Raise ``error`` with a :class:`ProviderError` of ``exc`` as its ``__cause__``; ``exc``
    itself stays out of ``__context__`` too, since its text may echo the API key."""
    try:
        raise error from ProviderError(exc)
    finally:
        error.__context__ = None  # set by the raise when called inside an ``except`` block


def _as_messages(messages: Messages) -> list[dict[str, str]]:
    """Plain-dict copies of the messages (a string becomes one user message), validated."""
    if isinstance(messages, str):
        if not messages.strip():
            raise ValueError("messages must not be an empty string")
        return [{"role": "user", "content": messages}]
    out = []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES or not isinstance(content, str):
            raise ValueError(
                f"messages[{i}] must have role in {sorted(_ROLES)} and string content, "
                f"got role={role!r}, content type {type(content).__name__}"
            )
        out.append({"role": role, "content": content})
    if not out:
        raise ValueError("messages must not be empty")
    return out


def _schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """``response_format`` asking the provider to decode under ``schema``'s JSON schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }
