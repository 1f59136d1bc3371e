"""The app's own framework LLM objects for the terminal chats' ``--llm-object``.

An app usually has its LLM object already: a LlamaIndex ``LLM`` or a Haystack chat generator.
rag-multihop takes it wherever it takes a model string, and drives it through its own
``LLMClient`` (timeout, retries, cache, the per-call account: see docs/llm.md, "Your
framework's LLM objects"). With ``--llm-object`` the chats answer through such an object
instead of a model string:

- LlamaIndex: :class:`OpenAICompatibleLLM`, a ``CustomLLM`` of the app's own over the
  ``openai`` SDK (LlamaIndex's ``OpenAILike``, ``pip install llama-index-llms-openai-like``,
  is the packaged equivalent), given to ``RagMultihopLLM``;
- Haystack: Haystack's ``OpenAIChatGenerator``, given to ``RagMultihopChatGenerator``.

Both talk to the chat's model over its OpenAI-compatible endpoint (:func:`endpoint`): the
embedded local model's server, or ``--llm openai/NAME`` (with ``--api-base`` for a vLLM or
llama.cpp server). Streams arrive as one piece: the client calls the object's ``chat``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.llm.client import PLACEHOLDER_API_KEY
from rag_multihop.llm.local import ensure_local_server, is_local_model, local_model_name

OPENAI_BASE = "https://api.openai.com/v1"


def check_endpoint(settings: LLMSettings) -> LLMSettings:
    """``settings`` when its model has an OpenAI-compatible endpoint (the local model or an
    ``openai/NAME`` model), else ``ValueError`` saying so; starts nothing.

    >>> check_endpoint(LLMSettings("anthropic/claude-3-5-haiku-latest"))
    Traceback (most recent call last):
    ...
    ValueError: --llm-object needs the local model or an openai/NAME model (an OpenAI-compatible endpoint), got 'anthropic/claude-3-5-haiku-latest'
    """  # noqa: E501
    if not (is_local_model(settings.model) or settings.model.startswith("openai/")):
        raise ValueError(
            "--llm-object needs the local model or an openai/NAME model (an OpenAI-compatible "
            f"endpoint), got {settings.model!r}"
        )
    return settings


def endpoint(settings: LLMSettings) -> tuple[str, str, str]:
    """``(model name, base URL, key)`` of the OpenAI-compatible endpoint of ``settings``
    (:func:`check_endpoint`): the local model's server (started here), or an ``openai/NAME``
    model at ``api_base`` (the key from ``OPENAI_API_KEY``, else a placeholder a local server
    ignores)."""
    if is_local_model(check_endpoint(settings).model):
        server = ensure_local_server(local_model_name(settings.model))
        return server.alias, server.base_url, server.api_key
    key = os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
    return settings.model.removeprefix("openai/"), settings.api_base or OPENAI_BASE, key


class OpenAICompatibleLLM(CustomLLM):
    """A LlamaIndex ``LLM`` of an app's own: chat completions of an OpenAI-compatible server
    through the ``openai`` SDK (its retries off: rag-multihop's client retries). The key is
    excluded from ``to_dict`` and the repr."""

    model: str = Field(description="The served model name.")
    api_base: str = Field(description="The server's /v1 URL.")
    api_key: str = Field(default=PLACEHOLDER_API_KEY, exclude=True, repr=False)
    max_tokens: int | None = None
    temperature: float = 0.0
    timeout: float = 120.0
    context_window: int = 8192
    _clients: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model,
            is_chat_model=True,
            context_window=self.context_window,
            num_output=self.max_tokens or 256,
        )

    def _client(self, kind: str) -> Any:
        if kind not in self._clients:
            import openai

            factory = openai.AsyncOpenAI if kind == "async" else openai.OpenAI
            self._clients[kind] = factory(
                base_url=self.api_base, api_key=self.api_key, timeout=self.timeout, max_retries=0
            )
        return self._clients[kind]

    def _request(self, messages: Sequence[ChatMessage]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role.value, "content": m.content or ""} for m in messages],
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        return request

    @staticmethod
    def _response(completion: Any) -> ChatResponse:
        text = completion.choices[0].message.content or ""
        return ChatResponse(message=ChatMessage(role="assistant", content=text), raw=completion)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        completion = self._client("sync").chat.completions.create(**self._request(messages))
        return self._response(completion)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        request = self._request(messages)
        return self._response(await self._client("async").chat.completions.create(**request))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        response = self.chat([ChatMessage(role="user", content=prompt)])
        return CompletionResponse(text=response.message.content or "", raw=response.raw)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self.complete(prompt).text
        yield CompletionResponse(text=text, delta=text)


def llama_index_client(settings: LLMSettings) -> LLMClient:
    """The chat's client over an :class:`OpenAICompatibleLLM` for ``settings``' endpoint: the
    object keeps the output cap and temperature, the client its timeout, retries and
    concurrency."""
    from llama_index.llms.rag_multihop import LlamaIndexChatModel

    model, base_url, key = endpoint(settings)
    llm = OpenAICompatibleLLM(
        model=model,
        api_base=base_url,
        api_key=key,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        timeout=settings.call_timeout,
    )
    return LLMClient.from_chat(
        LlamaIndexChatModel(llm),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        max_concurrency=settings.max_concurrency,
        input_cost_per_token=0.0 if is_local_model(settings.model) else None,
        output_cost_per_token=0.0 if is_local_model(settings.model) else None,
    )


def haystack_generator(generator: Any, settings: LLMSettings) -> Any:
    """``generator`` (the app's Haystack chat generator) driven by rag-multihop's client,
    with ``settings``' timeout and retries (and its replies' meta holding the account)."""
    from haystack_integrations.components.generators.rag_multihop import (
        RagMultihopChatGenerator,
    )

    return RagMultihopChatGenerator(
        llm=generator, timeout=settings.timeout, max_retries=settings.max_retries
    )
