"""``RagMultihopChatGenerator``: rag-multihop's ``LLMClient`` as a Haystack chat generator.

It takes ``messages`` (``ChatMessage`` list) and returns ``replies`` like Haystack's own chat
generators, calling any litellm model string, or ``"local"`` (the embedded llama.cpp model,
started on first use), through the core :class:`~rag_multihop.llm.LLMClient`: explicit
timeout and retries, bounded concurrency, and an account of every call. Each reply's ``meta``
holds ``model``, ``usage`` (``prompt_tokens``, ``completion_tokens``) and ``cost`` (US dollars,
``None`` when unknown, 0 for the local model). With ``streaming_callback`` the reply streams
piece by piece (``run_async`` awaits an async callback). The key is read from the environment
at call time (``api_key``: an environment-variable ``Secret``); ``to_dict`` stores the model
string, the variable's name and the other settings, never a key.

``llm`` may also be another Haystack chat generator (``OpenAIChatGenerator``, ...): its calls
then get the client's timeout, retries, cache and account (wrapped as in
:mod:`haystack_integrations.common.rag_multihop.chat_model`; ``max_tokens`` and
``temperature`` stay the generator's own, and a streamed reply arrives as one piece).

litellm-haystack's ``LiteLLMChatGenerator`` also calls litellm; this one starts the local
model and keeps rag-multihop's retry policy and per-call account, as the other components do.

Example:
    >>> generator = RagMultihopChatGenerator(llm="openai/gpt-4o-mini", max_tokens=256)
    >>> generator.to_dict()["init_parameters"]["max_tokens"]
    256
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import (
    HaystackChatModel,
    check_any_llm,
    llm_to_dict,
)
from haystack_integrations.common.rag_multihop.convert import check_api_key, key_variable

from rag_multihop.llm import ChatTransport, LLMClient, LLMReply, LLMSettings
from rag_multihop.llm.local import is_local_model

StreamingCallback = Callable[[StreamingChunk], None] | Callable[[StreamingChunk], Awaitable[None]]


def _messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role.value, "content": m.text or ""} for m in messages]


@component
class RagMultihopChatGenerator:
    """A chat generator over rag-multihop's ``LLMClient`` (see the module docstring).

    Args:
        llm: a litellm model string (``"local"`` for the embedded model), or another chat
            generator (see the module docstring).
        api_base: an OpenAI-compatible server URL (with a model string).
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable
            (with a model string).
        max_tokens, temperature, timeout, max_retries: the core
            :class:`~rag_multihop.llm.LLMSettings` fields (defaults and checks are the core's).
    """

    def __init__(
        self,
        *,
        llm: Any,
        api_base: str | None = None,
        api_key: Secret | None = None,
        max_tokens: int | None = None,
        temperature: float = LLMSettings.temperature,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        self.api_key = check_api_key(api_key)
        self.llm = check_any_llm(llm)
        self._chat = None if isinstance(self.llm, str) else HaystackChatModel(self.llm)
        if self._chat is not None and (api_base is not None or api_key is not None):
            raise ValueError(
                "api_base and api_key apply to a model-string llm; a chat generator holds its "
                "own endpoint and key"
            )
        self.settings = LLMSettings(
            self.llm if self._chat is None else self._chat.model_id,
            api_base=api_base,
            api_key_env=key_variable(self.api_key),
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=timeout,
            max_retries=max_retries,
        )
        self._client: LLMClient | None = None

    def warm_up(self) -> None:
        """Set up the LLM client (once)."""
        self._ready()

    def _ready(self) -> LLMClient:
        if self._client is None:
            transport = None if self._chat is None else ChatTransport(self._chat)
            self._client = LLMClient(self.settings, transport=transport)
        return self._client

    @property
    def client(self) -> LLMClient:
        """The core client every call goes through (set up on first use); the package's
        components given this generator as ``llm`` use it directly."""
        return self._ready()

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return default_to_dict(
            self,
            llm=llm_to_dict(self.llm),
            api_base=s.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            timeout=s.timeout,
            max_retries=s.max_retries,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagMultihopChatGenerator:
        return default_from_dict(cls, data)

    def _reply(self, reply: LLMReply | None) -> dict[str, list[ChatMessage]]:
        if reply is None:  # pragma: no cover - a finished stream always sets its reply
            raise RuntimeError("the stream ended without a reply")
        account = reply.account
        cost = 0.0 if is_local_model(self.settings.model) and account.cost is None else account.cost
        meta = {
            "model": self.settings.model,
            "finish_reason": reply.finish_reason,
            "usage": {
                "prompt_tokens": account.prompt_tokens,
                "completion_tokens": account.completion_tokens,
            },
            "cost": cost,
        }
        return {"replies": [ChatMessage.from_assistant(reply.text or "", meta=meta)]}

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """One reply to ``messages`` (streamed to ``streaming_callback`` when given)."""
        client = self._ready()
        if streaming_callback is None:
            return self._reply(client.complete(_messages(messages)))
        if inspect.iscoroutinefunction(streaming_callback):
            raise TypeError("run() needs a sync streaming_callback; use run_async for an async one")
        stream = client.stream(_messages(messages))
        for piece in stream:
            streaming_callback(StreamingChunk(content=piece))
        return self._reply(stream.reply)

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """The async twin of :meth:`run` (the client's own async calls; an async callback is
        awaited, a sync one called)."""
        client = self._ready()
        if streaming_callback is None:
            return self._reply(await client.acomplete(_messages(messages)))
        stream = client.astream(_messages(messages))
        async for piece in stream:
            result = streaming_callback(StreamingChunk(content=piece))
            if inspect.isawaitable(result):
                await result
        return self._reply(stream.reply)
