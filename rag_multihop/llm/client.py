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
import math
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
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from rag_multihop.llm.accounting import LLMAccount
from rag_multihop.llm.cache import LLMCache, cache_key
from rag_multihop.llm.errors import LLMCallError, LLMConfigError, LLMOutputError
from rag_multihop.llm.local import ensure_local_server, is_local_model, local_model_name
from rag_multihop.llm.prompts import format_repair
from rag_multihop.llm.structured import parse_reply
from rag_multihop.llm.transport import (
    LiteLLMTransport,
    RawReply,
    StreamDelta,
    StreamingTransport,
    Transport,
)
from rag_multihop.validation import check_env_var_name, loggable

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

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides every 5xx (timeout, conflict, rate limit)."""

_ROLES = frozenset({"system", "user", "assistant"})


class _Missing(enum.Enum):
    MISSING = enum.auto()


MISSING = _Missing.MISSING


def _number(value: object, name: str, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        number = float(value)
        if (number > low if low_open else number >= low) and number <= high:
            return number
    bracket = "(" if low_open else "["
    raise ValueError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {value!r}")


def _integer(value: object, name: str, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    ):
        return value
    upper = "" if high is None else f", at most {high}"
    raise ValueError(f"{name} must be an integer >= {low}{upper}, got {value!r}")


@dataclass(frozen=True)
class LLMSettings:
    """How to reach a model and how patiently to call it. Serialisable; holds no secret.

    Args:
        model: litellm model string, e.g. ``"openai/gpt-4o-mini"``,
            ``"anthropic/claude-3-5-haiku-latest"``, ``"ollama/llama3.1"``, or
            ``"openai/<served-model-name>"`` together with ``api_base``.
        api_base: base URL of an OpenAI-compatible server (``http://localhost:8000/v1``).
        api_key_env: NAME of the environment variable holding the key (never the key).
            ``None``: the provider's own variable (``OPENAI_API_KEY``, ...); with
            ``api_base`` and no such variable set, a placeholder key is sent.
        timeout: seconds per attempt (litellm's default is 6000 s, so it is always set).
        max_retries: retries after the first attempt on 429, 5xx, timeouts, connection errors.
        backoff_base: seconds before the first retry; doubles per retry, jittered to 50-100 %.
        backoff_max: cap on any wait, ``Retry-After`` included.
        temperature: sampling temperature, 0 for repeatable judging.
        max_tokens: cap on reply tokens (``None``: the provider's default).
        max_concurrency: requests in flight at once per client (sync and async counted apart).
        json_mode: ask for JSON in JSON calls (``response_format``); turn off for servers
            that reject any response format (parsing is defensive either way).
        json_schema: with ``json_mode``, send the reply's JSON schema so the provider decodes
            under it (``{"type": "json_schema", ...}``) instead of ``{"type": "json_object"}``.
            ``None`` (default): when the provider supports it (the local model does; others
            as litellm knows them); ``True``/``False``: always / never.
        input_cost_per_token, output_cost_per_token: US dollars, for models litellm cannot
            price (local servers: 0). Both or neither.

    >>> s = LLMSettings("openai/gpt-4o-mini", timeout=20)
    >>> LLMSettings.from_dict(s.to_dict()) == s
    True
    >>> LLMSettings("openai/gpt-4o-mini", timeout=0)
    Traceback (most recent call last):
    ...
    ValueError: timeout must be a number in (0, 3600], got 0
    """

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = None
    max_concurrency: int = 8
    json_mode: bool = True
    json_schema: bool | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"model must be a non-empty litellm model string, got {self.model!r}")
        if is_local_model(self.model):
            local_model_name(self.model)  # an unknown local name fails here, not at first use
            if self.api_base is not None:
                raise ValueError(
                    f"api_base must be None for the local model {self.model!r}: the library "
                    "starts its server and knows its address"
                )
        if self.api_base is not None and not (
            isinstance(self.api_base, str) and self.api_base.startswith(("http://", "https://"))
        ):
            raise ValueError(f"api_base must be an http(s) URL or None, got {self.api_base!r}")
        check_env_var_name(self.api_key_env, "api_key_env")  # never echoes a pasted key
        _number(self.timeout, "timeout", 0, 3600, low_open=True)
        _integer(self.max_retries, "max_retries", 0, 20)
        _number(self.backoff_base, "backoff_base", 0, 600)
        _number(self.backoff_max, "backoff_max", self.backoff_base, 3600)
        _number(self.temperature, "temperature", 0, 2)
        if self.max_tokens is not None:
            _integer(self.max_tokens, "max_tokens", 1)
        _integer(self.max_concurrency, "max_concurrency", 1, 1024)
        if not isinstance(self.json_mode, bool):
            raise ValueError(f"json_mode must be True or False, got {self.json_mode!r}")
        if self.json_schema is not None and not isinstance(self.json_schema, bool):
            raise ValueError(f"json_schema must be True, False or None, got {self.json_schema!r}")
        prices = (self.input_cost_per_token, self.output_cost_per_token)
        if (prices[0] is None) != (prices[1] is None):
            raise ValueError(
                "input_cost_per_token and output_cost_per_token must be given together, "
                f"got {prices[0]!r} and {prices[1]!r}"
            )
        for name, price in zip(
            ("input_cost_per_token", "output_cost_per_token"), prices, strict=True
        ):
            if price is not None:
                _number(price, name, 0, 1)

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready. The key itself is never part of the settings."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LLMSettings:
        """The inverse of :meth:`to_dict`; unknown keys raise ``ValueError`` naming them."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"unknown LLMSettings keys {unknown}; choose from {names}")
        return cls(**data)


@dataclass(frozen=True)
class LLMReply:
    """A text reply with its account. ``text`` is ``None`` when the provider sent none."""

    text: str | None
    model: str
    account: LLMAccount
    finish_reason: str | None = None
    refusal: str | None = None
    cached: bool = False


@dataclass(frozen=True)
class JSONReply(Generic[M]):
    """A validated reply.

    Attributes:
        value: the parsed object, or the caller's ``default`` when ``fallback`` is true.
        account: every attempt's usage (the repair attempt included).
        raw: the reply text ``value`` was parsed from (the last unusable one on fallback).
        repaired: ``value`` came from the repair attempt.
        fallback: ``value`` is the caller's default; ``error`` says why.
    """

    value: M
    account: LLMAccount
    raw: str | None
    repaired: bool = False
    fallback: bool = False
    error: LLMOutputError | None = field(default=None, compare=False)


class LLMClient:
    """Calls one model with retries, bounded concurrency, an optional cache and accounting.

    Args:
        settings: an :class:`LLMSettings`, or just a model string.
        cache: an :class:`~rag_multihop.llm.cache.LLMCache`; ``None`` disables caching.
        transport: makes single attempts; default :class:`LiteLLMTransport`.
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
        self.transport: Transport = transport if transport is not None else LiteLLMTransport()
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._total = LLMAccount()
        self._thread_slots = threading.BoundedSemaphore(self.settings.max_concurrency)
        self._loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._loop_slots = weakref.WeakKeyDictionary()
        self._loop_thread: _LoopThread | None = None

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
                        sent, api_key=api_key, timeout=self.settings.timeout
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
                        sent, api_key=api_key, timeout=self.settings.timeout
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

        Failures before the first piece are retried like :meth:`complete`; a stream that
        breaks after pieces were delivered raises :class:`LLMCallError` (the pieces cannot
        be taken back). A cached reply arrives as one piece.
        """
        request = self._request(messages, temperature, max_tokens, False)
        return TextStream(self._stream_pieces(request))

    def astream(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncTextStream:
        """The async twin of :meth:`stream` (``async for piece in client.astream(...)``)."""
        request = self._request(messages, temperature, max_tokens, False)
        return AsyncTextStream(self._astream_pieces(request))

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
        collected = _Collected()
        while True:
            try:
                with self._thread_slots:
                    for delta in transport.stream(
                        sent, api_key=api_key, timeout=self.settings.timeout
                    ):
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
        collected = _Collected()
        while True:
            try:
                async with self._slot():
                    async for delta in transport.astream(
                        sent, api_key=api_key, timeout=self.settings.timeout
                    ):
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
        self, exc: Exception, attempt: int, collected: _Collected
    ) -> float | None:
        if collected.pieces:
            raise LLMCallError(
                f"the stream from {self.settings.model!r} broke after {len(collected.pieces)} "
                f"piece(s): {type(exc).__name__}: {exc}",
                model=self.settings.model,
                attempts=attempt + 1,
            ) from exc
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
        bound = _integer(self.settings.max_concurrency if limit is None else limit, "limit", 1)
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
        if _loop_running():
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
        if _loop_running():
            coroutine.close()
            raise RuntimeError(
                "LLMClient.run() cannot be called from a running event loop; await the coroutine "
                "instead (e.g. `await client.acomplete(...)`, `await retriever.arun(...)`)"
            )
        with self._lock:
            if self._loop_thread is None:
                self._loop_thread = _LoopThread()
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
            else _number(temperature, "temperature", 0, 2),
        }
        tokens = s.max_tokens if max_tokens is None else _integer(max_tokens, "max_tokens", 1)
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
        if is_local_model(s.model):
            return True  # llama.cpp's server turns the schema into a decoding grammar
        if isinstance(self.transport, StreamingTransport):
            return self.transport.supports_response_schema(s.model)
        return False

    def _prepare(self, request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The request as sent and the API key, both resolved at call time (the key is
        never stored); the local model is routed to its server here (started on first use).
        """
        s = self.settings
        if is_local_model(s.model):
            server = ensure_local_server(local_model_name(s.model))
            routed = {**request, "model": server.model, "api_base": server.base_url}
            return routed, PLACEHOLDER_API_KEY
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
        """Seconds to wait before retrying, or raise the typed error; ``None``: not ours."""
        s = self.settings
        status = _status_code(exc)
        key_source = s.api_key_env or "the provider's API key variable"
        if status in (401, 403):
            raise LLMConfigError(
                f"the provider rejected the API key for {s.model!r} (HTTP {status}); "
                f"check {key_source}"
            ) from exc
        if status == 404:
            raise LLMConfigError(
                f"the provider does not serve model {s.model!r} (HTTP 404); check the model "
                f"name{' and api_base' if s.api_base else ''}"
            ) from exc
        retryable = isinstance(exc, TimeoutError | ConnectionError) or (
            status is not None and (status in RETRYABLE_STATUS or status >= 500)
        )
        if not retryable:
            if status is None:
                return None  # not a provider error (a bug, a cancellation): let it through
            raise LLMCallError(
                f"{s.model!r} rejected the request (HTTP {status}): {exc}",
                model=s.model,
                attempts=attempt + 1,
            ) from exc
        if attempt >= s.max_retries:
            raise LLMCallError(
                f"{s.model!r} failed after {attempt + 1} attempt(s) (max_retries="
                f"{s.max_retries}, timeout={s.timeout:g} s); last error: "
                f"{type(exc).__name__}: {exc}",
                model=s.model,
                attempts=attempt + 1,
            ) from exc
        delay = min(s.backoff_max, s.backoff_base * 2**attempt) * (0.5 + 0.5 * self._rng.random())
        retry_after = _retry_after(exc)
        if retry_after is not None:
            delay = max(delay, retry_after)
        delay = min(delay, s.backoff_max)
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
                semaphore = asyncio.Semaphore(self.settings.max_concurrency)
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
        )
        with self._lock:  # retries were counted into the total as they happened
            self._total = self._total + LLMAccount(
                calls=1,
                prompt_tokens=raw.prompt_tokens,
                completion_tokens=raw.completion_tokens,
                cost=cost,
                wall_time_s=seconds,
            )
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


class TextStream:
    """Text pieces of a streamed reply (see :meth:`LLMClient.stream`); after the last piece
    :attr:`reply` holds the whole reply with its account.

    Example (a fake streaming transport):
        >>> from rag_multihop.llm.transport import RawReply, StreamDelta
        >>> class Fake:
        ...     def check_model(self, model): pass
        ...     def missing_credentials(self, model, api_base): return []
        ...     def supports_response_schema(self, model): return False
        ...     def complete(self, request, *, api_key, timeout): return RawReply("hi there")
        ...     async def acomplete(self, request, *, api_key, timeout): return RawReply("")
        ...     def stream(self, request, *, api_key, timeout):
        ...         yield StreamDelta("hi ")
        ...         yield StreamDelta("there", finish_reason="stop")
        ...         yield StreamDelta(prompt_tokens=7, completion_tokens=2)
        ...     async def astream(self, request, *, api_key, timeout):
        ...         yield StreamDelta("hi")
        >>> stream = LLMClient("openai/gpt-4o-mini", transport=Fake()).stream("Say hi.")
        >>> list(stream), stream.reply.text, stream.reply.account.total_tokens
        (['hi ', 'there'], 'hi there', 9)
    """

    def __init__(self, pieces: Iterator[str | LLMReply]) -> None:
        self._pieces = pieces
        self.reply: LLMReply | None = None

    def __iter__(self) -> Iterator[str]:
        for item in self._pieces:
            if isinstance(item, LLMReply):
                self.reply = item
            else:
                yield item


class AsyncTextStream:
    """The async twin of :class:`TextStream` (``async for``)."""

    def __init__(self, pieces: AsyncIterator[str | LLMReply]) -> None:
        self._pieces = pieces
        self.reply: LLMReply | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for item in self._pieces:
            if isinstance(item, LLMReply):
                self.reply = item
            else:
                yield item


class _Collected:
    """What a stream delivered so far, turned into a :class:`RawReply` at its end.

    Without a usage report from the provider, completion tokens are counted as pieces
    (one token per piece for OpenAI-compatible servers) and prompt tokens stay 0.
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.model = ""
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None

    def add(self, delta: StreamDelta) -> bool:
        """Record ``delta``; whether it carries text to pass on."""
        self.finish_reason = delta.finish_reason or self.finish_reason
        self.model = delta.model or self.model
        if delta.prompt_tokens is not None:
            self.prompt_tokens = delta.prompt_tokens
        if delta.completion_tokens is not None:
            self.completion_tokens = delta.completion_tokens
        if delta.text:
            self.pieces.append(delta.text)
            return True
        return False

    def raw(self) -> RawReply:
        if self.completion_tokens is None:
            logger.debug("the stream reported no usage; counting %d pieces", len(self.pieces))
        return RawReply(
            text="".join(self.pieces),
            finish_reason=self.finish_reason,
            model=self.model,
            prompt_tokens=self.prompt_tokens or 0,
            completion_tokens=(
                self.completion_tokens if self.completion_tokens is not None else len(self.pieces)
            ),
        )


class _LoopThread:
    """An event loop running in a daemon thread, for running coroutines from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="rag-multihop-llm", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        try:  # stopped: cancel what is left (litellm's logging tasks), then close
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=10)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header on a provider error, when it has one."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
            seconds = float(value) if value is not None else None
        except (AttributeError, TypeError, ValueError):
            continue
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """``response_format`` asking the provider to decode under ``schema``'s JSON schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }
