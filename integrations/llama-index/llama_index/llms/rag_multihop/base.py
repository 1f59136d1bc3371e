"""``RagMultihopLLM``: rag-multihop's :class:`~rag_multihop.llm.LLMClient` as a LlamaIndex LLM.

A chat model for LlamaIndex's engines (``CondensePlusContextChatEngine``, query engines,
``QueryFusionRetriever``'s query writing) that calls any litellm model string, or
``"local"`` (the embedded llama.cpp model, started on first use), through the core client:
explicit timeouts and retries, bounded concurrency, the client's cache, and an account of every
call. ``calls`` lists ``(kind, account)`` per call, ``"complete"`` or ``"chat"`` (engines
condense questions with ``complete`` and answer with ``chat``), so an app can say what each
step cost; ``client.total`` is the running sum. Sync, async and streaming in both (the async
calls are the client's own, not threads). Framework-only LLM classes (``llama-index-llms-litellm``)
call litellm too, but start no local model and keep no per-call account.

Example (a plain-object transport stands in for the provider):
    >>> from rag_multihop.llm import LLMClient
    >>> from rag_multihop.llm.transport import RawReply
    >>> class Echo:
    ...     def check_model(self, model): pass
    ...     def missing_credentials(self, model, api_base): return []
    ...     def supports_response_schema(self, model): return False
    ...     def complete(self, request, *, api_key, timeout):
    ...         return RawReply("Paris.", "stop", None, "fake", 12, 2, 0.0)
    ...     async def acomplete(self, request, *, api_key, timeout):
    ...         return self.complete(request, api_key=api_key, timeout=timeout)
    >>> llm = RagMultihopLLM(LLMClient("openai/fake", transport=Echo()))
    >>> llm.complete("Capital of France?").text, llm.calls[0][0], llm.calls[0][1].total_tokens
    ('Paris.', 'complete', 14)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.llm import LLM

from rag_multihop.llm import LLMAccount, LLMClient, LLMSettings
from rag_multihop.llm.local import is_local_model
from rag_multihop.validation import check_positive_int

LOCAL_CONTEXT_WINDOW = 2048
"""Context window of one slot of the embedded local server."""

DEFAULT_CONTEXT_WINDOW = 8192
"""Context window assumed for other models unless ``context_window`` is given."""

DEFAULT_NUM_OUTPUT = 256
"""Reply tokens assumed when the client's settings set no ``max_tokens``."""


def _messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role.value, "content": m.content or ""} for m in messages]


class RagMultihopLLM(CustomLLM):
    """A LlamaIndex chat LLM over rag-multihop's ``LLMClient`` (see the module docstring).

    Args:
        llm: a litellm model string (``"local"`` for the embedded model), an
            :class:`~rag_multihop.llm.LLMSettings`, a ready :class:`~rag_multihop.llm.LLMClient`,
            or another LlamaIndex ``LLM`` (wrapped, see
            :mod:`llama_index.llms.rag_multihop.objects`: its calls get the client's timeout,
            retries, cache and account; streams arrive as one piece).
        context_window: the model's context window in tokens (default: one slot of the local
            server for ``"local"``, else 8192).
    """

    model_name: str = Field(description="litellm model string the client calls.")
    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, gt=0)
    num_output: int = Field(default=DEFAULT_NUM_OUTPUT, gt=0)
    _client: LLMClient = PrivateAttr()
    _calls: list[tuple[str, LLMAccount]] = PrivateAttr(default_factory=list)

    def __init__(
        self,
        llm: str | LLMSettings | LLMClient | LLM,
        *,
        context_window: int | None = None,
        **kwargs: Any,
    ) -> None:
        from llama_index.llms.rag_multihop.objects import as_llm_client

        client = as_llm_client(llm)  # a key pasted as llm is refused, never shown
        settings = client.settings
        if context_window is None:
            local = is_local_model(settings.model)
            context_window = LOCAL_CONTEXT_WINDOW if local else DEFAULT_CONTEXT_WINDOW
        super().__init__(
            model_name=settings.model,
            context_window=check_positive_int(context_window, "context_window"),
            num_output=settings.max_tokens or DEFAULT_NUM_OUTPUT,
            **kwargs,
        )
        self._client = client

    @classmethod
    def class_name(cls) -> str:
        return "RagMultihopLLM"

    @property
    def client(self) -> LLMClient:
        """The core client every call goes through (``client.total``: everything spent)."""
        return self._client

    @property
    def calls(self) -> list[tuple[str, LLMAccount]]:
        """``(kind, account)`` of every call so far, ``kind`` ``"complete"`` or ``"chat"``;
        clear it between turns to account one turn."""
        return self._calls

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            is_chat_model=True,
            model_name=self.model_name,
        )

    # ------------------------------------------------------------------ completion

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        reply = self._client.complete(prompt)
        self._calls.append(("complete", reply.account))
        return CompletionResponse(text=reply.text or "")

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        reply = await self._client.acomplete(prompt)
        self._calls.append(("complete", reply.account))
        return CompletionResponse(text=reply.text or "")

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text, stream = "", self._client.stream(prompt)
        for piece in stream:
            text += piece
            yield CompletionResponse(text=text, delta=piece)
        self._calls.append(("complete", stream.reply.account if stream.reply else LLMAccount()))

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        async def pieces() -> CompletionResponseAsyncGen:
            text, stream = "", self._client.astream(prompt)
            async for piece in stream:
                text += piece
                yield CompletionResponse(text=text, delta=piece)
            account = stream.reply.account if stream.reply else LLMAccount()
            self._calls.append(("complete", account))

        return pieces()

    # ------------------------------------------------------------------ chat

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        reply = self._client.complete(_messages(messages))
        self._calls.append(("chat", reply.account))
        return ChatResponse(message=ChatMessage(role="assistant", content=reply.text or ""))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        reply = await self._client.acomplete(_messages(messages))
        self._calls.append(("chat", reply.account))
        return ChatResponse(message=ChatMessage(role="assistant", content=reply.text or ""))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        text, stream = "", self._client.stream(_messages(messages))
        for piece in stream:
            text += piece
            yield ChatResponse(message=ChatMessage(role="assistant", content=text), delta=piece)
        self._calls.append(("chat", stream.reply.account if stream.reply else LLMAccount()))

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        async def pieces() -> ChatResponseAsyncGen:
            text, stream = "", self._client.astream(_messages(messages))
            async for piece in stream:
                text += piece
                yield ChatResponse(message=ChatMessage(role="assistant", content=text), delta=piece)
            self._calls.append(("chat", stream.reply.account if stream.reply else LLMAccount()))

        return pieces()
