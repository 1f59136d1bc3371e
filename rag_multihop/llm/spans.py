"""The attributes of an LLM call's span, in OpenTelemetry's GenAI names.

:meth:`~rag_multihop.llm.client.LLMClient.complete` (and every call built on it) runs inside
a ``rag_multihop.llm.chat`` span: :func:`request_attributes` when it starts,
:func:`reply_attributes` when the reply is in (``gen_ai.usage.*`` tokens, cached, retries,
cost). A streamed call (:func:`traced_stream`, :func:`traced_astream`) is sent as one such
span when its stream ends (``rag_multihop.llm.stream``; ``rag_multihop.llm.abandoned`` when
the reader stopped early). Prompts and replies are never recorded.

>>> request_attributes({"model": "openai/gpt-4o-mini", "temperature": 0.0, "max_tokens": 64})
... # doctest: +NORMALIZE_WHITESPACE
{'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'openai/gpt-4o-mini',
 'gen_ai.provider.name': 'openai', 'gen_ai.request.temperature': 0.0,
 'gen_ai.request.max_tokens': 64, 'rag_multihop.llm.json': False}
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from rag_multihop.llm.local import is_local_model
from rag_multihop.llm.replies import LLMReply
from rag_multihop.tracing import record_span

SPAN = "llm.chat"
"""The span of one call (``rag_multihop.llm.chat``)."""


def provider(model: str) -> str:
    """The provider a litellm model string names (``"openai/..."`` -> ``"openai"``; the
    embedded model is ``"llama.cpp"``; a bare name is litellm's guess, ``"litellm"``)."""
    if is_local_model(model):
        return "llama.cpp"
    return model.split("/", 1)[0] if "/" in model else "litellm"


def request_attributes(request: Mapping[str, Any]) -> dict[str, Any]:
    """What a call asks for: operation, model, provider, temperature, output cap, JSON mode."""
    model = str(request["model"])
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.provider.name": provider(model),
    }
    if request.get("temperature") is not None:
        attributes["gen_ai.request.temperature"] = float(request["temperature"])
    if request.get("max_tokens") is not None:
        attributes["gen_ai.request.max_tokens"] = int(request["max_tokens"])
    attributes["rag_multihop.llm.json"] = "response_format" in request
    return attributes


def reply_attributes(reply: LLMReply) -> dict[str, Any]:
    """What a call cost: tokens (``gen_ai.usage.*``), response model and finish reason,
    whether the cache answered it, retries, cost (when known) and estimated token counts."""
    account = reply.account
    attributes: dict[str, Any] = {
        "gen_ai.response.model": reply.model,
        "gen_ai.usage.input_tokens": account.prompt_tokens,
        "gen_ai.usage.output_tokens": account.completion_tokens,
        "rag_multihop.llm.cached": reply.cached,
        "rag_multihop.llm.retries": account.retries,
        "rag_multihop.llm.estimated": account.estimated,
    }
    if reply.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = (reply.finish_reason,)
    if account.cost is not None:
        attributes["rag_multihop.llm.cost_usd"] = float(account.cost)
    return attributes


def traced_stream(
    pieces: Iterator[str | LLMReply], request: Mapping[str, Any]
) -> Iterator[str | LLMReply]:
    """``pieces`` as they come; one ``llm.chat`` span when they end (see the module
    docstring)."""
    start, reply = time.time_ns(), None
    try:
        for piece in pieces:
            if isinstance(piece, LLMReply):
                reply = piece
            yield piece
    except GeneratorExit:
        _stream_span(request, reply, start, abandoned=True)
        raise
    except BaseException as exc:
        _stream_span(request, reply, start, error=exc)
        raise
    _stream_span(request, reply, start)


async def traced_astream(
    pieces: AsyncIterator[str | LLMReply], request: Mapping[str, Any]
) -> AsyncIterator[str | LLMReply]:
    """The async twin of :func:`traced_stream`."""
    start, reply = time.time_ns(), None
    try:
        async for piece in pieces:
            if isinstance(piece, LLMReply):
                reply = piece
            yield piece
    except GeneratorExit:
        _stream_span(request, reply, start, abandoned=True)
        raise
    except BaseException as exc:
        _stream_span(request, reply, start, error=exc)
        raise
    _stream_span(request, reply, start)


def _stream_span(
    request: Mapping[str, Any],
    reply: LLMReply | None,
    start: int,
    *,
    abandoned: bool = False,
    error: BaseException | None = None,
) -> None:
    attributes = request_attributes(request)
    attributes["rag_multihop.llm.stream"] = True
    if reply is not None:
        attributes.update(reply_attributes(reply))
    if abandoned:
        attributes["rag_multihop.llm.abandoned"] = True
    record_span(SPAN, attributes, start, error=error)
