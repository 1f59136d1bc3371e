"""The one place that talks to litellm: a :class:`Transport` and its litellm implementation.

The client (:mod:`rag_multihop.llm.client`) does retries, caching, accounting and parsing;
a transport only validates the model string, names missing credentials and makes a single
attempt, returning a provider-neutral :class:`RawReply`. Tests swap in a plain-object
transport; everything litellm-specific (its lazy import, its response objects, its
``max_retries``/``num_retries`` switches) stays in :class:`LiteLLMTransport`.

Example:
    >>> class Echo:  # any object with these four methods is a Transport
    ...     def check_model(self, model): pass
    ...     def missing_credentials(self, model, api_base): return []
    ...     def complete(self, request, *, api_key, timeout):
    ...         return RawReply(text=request["messages"][-1]["content"], model=request["model"])
    ...     async def acomplete(self, request, *, api_key, timeout):
    ...         return self.complete(request, api_key=api_key, timeout=timeout)
    >>> isinstance(Echo(), Transport)
    True
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from rag_multihop._optional import require
from rag_multihop.llm.errors import LLMConfigError

logger = logging.getLogger(__name__)

_SECRET_VARIABLE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
MODEL_EXAMPLES = (
    "'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'ollama/llama3.1', or "
    "'openai/<served-model-name>' with api_base for a vLLM or llama.cpp server"
)


@dataclass(frozen=True)
class RawReply:
    """One provider reply, reduced to what the client needs (and what the cache stores).

    ``cost`` is ``None`` when the provider's price for the model is unknown.
    ``usage_estimated``: the provider reported no usage, so the token counts are an estimate
    (litellm's, a count of streamed pieces) or 0.
    """

    text: str | None
    finish_reason: str | None = None
    refusal: str | None = None
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    usage_estimated: bool = False

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> RawReply:
        """Rebuild from :meth:`to_payload` output; unknown keys (a newer writer) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in payload.items() if k in names})


@dataclass(frozen=True)
class StreamDelta:
    """One piece of a streamed reply: new text, and on the last pieces the finish reason
    and the usage (``None`` when none came; ``usage_estimated`` when it is litellm's
    estimate because the provider reported none)."""

    text: str = ""
    finish_reason: str | None = None
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage_estimated: bool = False


@runtime_checkable
class Transport(Protocol):
    """Makes single LLM attempts; retries, cache and accounting are the client's job.

    ``request`` holds ``model``, ``messages`` and the sampling parameters (and ``api_base``
    when set); ``api_key`` is ``None`` when the provider reads its own environment variable.
    Errors are raised as the provider's exceptions; the client classifies them by their
    ``status_code`` attribute (and ``TimeoutError``/``ConnectionError``).
    """

    def check_model(self, model: str) -> None:
        """Raise :class:`LLMConfigError` when ``model`` names no known provider."""
        ...

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        """Names of the unset environment variables that hold the provider's credentials."""
        ...

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply: ...

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply: ...


@runtime_checkable
class StreamingTransport(Transport, Protocol):
    """A :class:`Transport` that can also stream replies and say whether a model decodes
    under a JSON schema (``response_format`` of type ``json_schema``)."""

    def supports_response_schema(self, model: str) -> bool: ...

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]: ...

    def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]: ...


class LiteLLMTransport:
    """A :class:`Transport` over ``litellm.completion`` / ``litellm.acompletion``.

    litellm is imported on first use. litellm's own retries are switched off
    (``max_retries=0, num_retries=0`` on every call) because the client retries with
    backoff itself, and ``litellm.suppress_debug_info`` is set so that litellm does not
    print help banners to stdout on errors (it logs through its ``LiteLLM`` logger instead).
    """

    def __init__(self) -> None:
        self._litellm: ModuleType | None = None

    @property
    def litellm(self) -> ModuleType:
        if self._litellm is None:
            module = require("litellm", extra="llm")
            module.suppress_debug_info = True  # type: ignore[attr-defined]
            self._litellm = module
        return self._litellm

    def check_model(self, model: str) -> None:
        litellm = self.litellm
        providers = sorted({getattr(p, "value", p) for p in litellm.provider_list})
        prefix, slash, name = model.partition("/")
        if slash and name and prefix in providers:
            return
        if not slash and "litellm_provider" in litellm.model_cost.get(model, {}):
            return  # a bare name litellm knows, such as "gpt-4o-mini"
        hint = ""
        if slash:
            close = difflib.get_close_matches(prefix, providers, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise LLMConfigError(
            f"unknown model string {model!r}: start it with a litellm provider prefix"
            f"{hint}, e.g. {MODEL_EXAMPLES}; providers: https://docs.litellm.ai/docs/providers"
        )

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        env = self.litellm.validate_environment(model=model, api_base=api_base)
        if env.get("keys_in_environment"):
            return []
        # litellm also lists endpoint variables (OLLAMA_API_BASE, AZURE_API_VERSION); only
        # credentials are required here, endpoints have defaults or come from api_base.
        return [name for name in env.get("missing_keys", []) if _SECRET_VARIABLE.search(name)]

    def supports_response_schema(self, model: str) -> bool:
        """Whether litellm knows ``model`` to accept a JSON schema as its response format."""
        try:
            return bool(self.litellm.supports_response_schema(model=model))
        except Exception:  # litellm raises for models it has no entry for
            return False

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        response = self.litellm.completion(**self._kwargs(request, api_key, timeout))
        return _raw_reply(response)

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        kwargs = self._kwargs(request, api_key, timeout)
        chunks = self.litellm.completion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        try:
            for chunk in chunks:
                yield _stream_delta(chunk, chunks)
        finally:  # also when the reader stops early: release the HTTP response
            close_stream(chunks)

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        kwargs = self._kwargs(request, api_key, timeout)
        chunks = await self.litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        try:
            async for chunk in chunks:
                yield _stream_delta(chunk, chunks)
        finally:
            await aclose_stream(chunks)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        response = await self.litellm.acompletion(**self._kwargs(request, api_key, timeout))
        return _raw_reply(response)

    @staticmethod
    def _kwargs(request: Mapping[str, Any], api_key: str | None, timeout: float) -> dict[str, Any]:
        kwargs = {**request, "timeout": timeout, "max_retries": 0, "num_retries": 0}
        if api_key is not None:
            kwargs["api_key"] = api_key
        return kwargs


def close_stream(stream: object) -> None:
    """Close ``stream`` (a generator, litellm's stream wrapper) when it can be closed."""
    close = getattr(stream, "close", None)
    if callable(close):
        close()


async def aclose_stream(stream: object) -> None:
    """The async twin of :func:`close_stream` (``aclose``)."""
    aclose = getattr(stream, "aclose", None)
    if callable(aclose):
        await aclose()


def _raw_reply(response: Any) -> RawReply:
    """Read a litellm ``ModelResponse`` (OpenAI chat-completion shape)."""
    choices = getattr(response, "choices", None) or []
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    text = finish_reason = refusal = None
    if choices:
        message = choices[0].message
        text = message.content
        finish_reason = choices[0].finish_reason
        refusal = getattr(message, "refusal", None) or (
            getattr(message, "provider_specific_fields", None) or {}
        ).get("refusal")
    cost = hidden.get("response_cost")
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    return RawReply(
        text=text,
        finish_reason=finish_reason,
        refusal=refusal,
        model=str(getattr(response, "model", "") or ""),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=float(cost) if cost is not None else None,
        # litellm fills a missing usage block with zeros; no provider reports 0 prompt tokens
        usage_estimated=prompt == 0 and completion == 0 and bool(text),
    )


def _stream_delta(chunk: Any, stream: Any = None) -> StreamDelta:
    """Read one litellm stream chunk (OpenAI chat-completion-chunk shape) of ``stream``."""
    choices = getattr(chunk, "choices", None) or []
    usage = getattr(chunk, "usage", None)
    text, finish_reason = "", None
    if choices:
        delta = getattr(choices[0], "delta", None)
        text = (getattr(delta, "content", None) or "") if delta is not None else ""
        finish_reason = getattr(choices[0], "finish_reason", None)
    prompt = getattr(usage, "prompt_tokens", None) if usage is not None else None
    completion = getattr(usage, "completion_tokens", None) if usage is not None else None
    return StreamDelta(
        text=text,
        finish_reason=finish_reason,
        model=str(getattr(chunk, "model", "") or ""),
        prompt_tokens=int(prompt) if prompt is not None else None,
        completion_tokens=int(completion) if completion is not None else None,
        usage_estimated=usage is not None and not _provider_reported_usage(stream),
    )


def _provider_reported_usage(stream: Any) -> bool:
    """Whether the provider itself sent usage in ``stream`` (a litellm
    ``CustomStreamWrapper``). litellm keeps the provider's chunks in ``stream.chunks``; when
    none of them carried usage, the usage of its final chunk is litellm's own estimate (its
    tokenizer's count of the prompt and the reply). A stream that keeps no chunks cannot
    tell, and its usage is taken as reported."""
    received = getattr(stream, "chunks", None)
    if not isinstance(received, list):
        return True
    return any(getattr(chunk, "usage", None) is not None for chunk in received)
