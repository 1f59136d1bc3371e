"""A chat callable as the client's model: the :class:`ChatModel` protocol and its transport.

A framework's own LLM object (a LlamaIndex ``LLM``, a Haystack chat generator, any object of
yours) becomes a model of :class:`~rag_multihop.llm.client.LLMClient` by a small wrapper with
``model_id`` and ``chat``/``achat`` (messages in, a :class:`ChatReply` out); the adapter
packages ship the wrappers for their frameworks. :class:`ChatTransport` makes one attempt
through such an object, so everything the client does on top of a transport still holds:

- **timeout**: each attempt gets the settings' ``timeout``. ``achat`` is cancelled when it
  expires; a sync ``chat`` runs in a worker thread that is abandoned (it cannot be stopped),
  and the attempt fails with ``TimeoutError``;
- **retries**: ``TimeoutError``, ``ConnectionError`` and exceptions with an HTTP
  ``status_code`` of 429/5xx (the OpenAI, Anthropic and httpx errors frameworks raise) are
  retried with backoff; any other exception propagates unchanged on the first attempt. The
  object's own retries (e.g. an OpenAI client's ``max_retries``) run inside each attempt;
- **cache**: keyed by ``model_id`` and the request (messages, temperature, max_tokens,
  response format), so ``model_id`` must name the model *and* any configuration that
  changes its replies; wrappers let you set it;
- **account**: the object's token counts when it reports them; otherwise an estimate of
  about four characters per token, marked ``usage_estimated`` (so ``LLMAccount.estimated``
  says so); ``cost`` is the object's when it reports one, else unknown (``None``) unless the
  settings price tokens (``input_cost_per_token`` / ``output_cost_per_token``);
- **structured replies**: JSON calls parse and repair the reply as for any model. The
  request's ``response_format``, ``temperature`` and ``max_tokens`` are *not* forwarded:
  the object samples as you configured it, and JSON comes from the prompts;
- **streaming**: the reply arrives as one piece.

Example (a plain object stands in for a framework's LLM):
    >>> from rag_multihop.llm import LLMClient
    >>> class Upper:
    ...     model_id = "mine/upper"
    ...     def chat(self, messages):
    ...         return ChatReply(messages[-1]["content"].upper(), prompt_tokens=3,
    ...                          completion_tokens=2)
    ...     async def achat(self, messages):
    ...         return self.chat(messages)
    >>> client = LLMClient.from_chat(Upper(), timeout=10)
    >>> reply = client.complete("hello")
    >>> reply.text, reply.account.total_tokens, reply.account.estimated
    ('HELLO', 5, False)
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rag_multihop.llm.transport import RawReply, StreamDelta
from rag_multihop.secrets import check_model_name

CHARS_PER_TOKEN = 4
"""The estimate of token counts a chat model does not report: characters / 4, rounded up."""


@dataclass(frozen=True)
class ChatReply:
    """What a :class:`ChatModel` returns: the text and, when the framework reports them, the
    token counts (``None``: not reported, so estimated), finish reason, served model name and
    cost in US dollars."""

    text: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    model: str = ""
    cost: float | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A chat callable the client can drive in place of litellm.

    ``messages`` are ``{"role": "system" | "user" | "assistant", "content": str}`` dicts.
    ``model_id`` is a stable, human-readable identity (it keys the cache and names the model
    in errors and accounts); it must not contain a secret.
    """

    model_id: str

    def chat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply: ...

    async def achat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply: ...


def check_chat_model(chat: object, field: str = "llm") -> ChatModel:
    """``chat`` when it satisfies :class:`ChatModel` with a usable ``model_id``; else
    ``TypeError`` naming its type (never its repr, which may hold a key)."""
    if not isinstance(chat, ChatModel):
        raise TypeError(
            f"{field} must have model_id, chat(messages) and achat(messages) (a "
            f"rag_multihop.llm.ChatModel); got {type(chat).__name__}"
        )
    check_model_name(chat.model_id, f"{field}.model_id", kind="model identity")
    return chat


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` estimated as characters / :data:`CHARS_PER_TOKEN`, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class ChatTransport:
    """A :class:`~rag_multihop.llm.transport.StreamingTransport` over a :class:`ChatModel`
    (semantics in the module docstring)."""

    def __init__(self, chat: ChatModel) -> None:
        self.chat = check_chat_model(chat)

    def check_model(self, model: str) -> None:
        return None  # the object is the model

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []  # the object holds its own credentials

    def supports_response_schema(self, model: str) -> bool:
        return False  # the request's response format is not forwarded

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        messages = _messages(request)
        reply = _in_thread(lambda: self.chat.chat(messages), timeout, self.chat.model_id)
        return self._raw(messages, reply)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        messages = _messages(request)
        try:
            reply = await asyncio.wait_for(self.chat.achat(messages), timeout)
        except TimeoutError as exc:  # asyncio's (an alias from Python 3.11)
            raise TimeoutError(_timeout_message(self.chat.model_id, timeout)) from exc
        return self._raw(messages, reply)

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        yield _one_piece(self.complete(request, api_key=api_key, timeout=timeout))

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        yield _one_piece(await self.acomplete(request, api_key=api_key, timeout=timeout))

    def _raw(self, messages: list[dict[str, str]], reply: object) -> RawReply:
        if not isinstance(reply, ChatReply):
            raise TypeError(
                f"{type(self.chat).__name__}.chat must return a ChatReply, "
                f"got {type(reply).__name__}"
            )
        text = reply.text or ""
        estimated = reply.prompt_tokens is None or reply.completion_tokens is None
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = estimate_tokens("\n".join(m["content"] for m in messages))
        completion = reply.completion_tokens
        if completion is None:
            completion = estimate_tokens(text)
        return RawReply(
            text=reply.text,
            finish_reason=reply.finish_reason,
            model=reply.model or self.chat.model_id,
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            cost=reply.cost,
            usage_estimated=estimated,
        )


def _messages(request: Mapping[str, Any]) -> list[dict[str, str]]:
    return [dict(m) for m in request["messages"]]


def _timeout_message(model_id: str, timeout: float) -> str:
    return f"{model_id} did not reply within the timeout of {timeout:g} s"


def _in_thread(call: Callable[[], ChatReply], timeout: float, model_id: str) -> ChatReply:
    """``call()`` in a daemon thread (with the caller's context variables, so framework
    instrumentation keeps its parent span), waiting at most ``timeout`` seconds."""
    outcome: list[Any] = []
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome.append((True, context.run(call)))
        except BaseException as exc:  # handed to the caller below
            outcome.append((False, exc))

    worker = threading.Thread(target=work, name=f"chat-{model_id}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise TimeoutError(_timeout_message(model_id, timeout))
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _one_piece(raw: RawReply) -> StreamDelta:
    return StreamDelta(
        text=raw.text or "",
        finish_reason=raw.finish_reason,
        model=raw.model,
        prompt_tokens=raw.prompt_tokens,
        completion_tokens=raw.completion_tokens,
        usage_estimated=raw.usage_estimated,
    )
