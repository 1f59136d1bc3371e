"""A LlamaIndex ``LLM`` as rag-multihop's model: :class:`LlamaIndexChatModel` and
:func:`as_llm_client`, the one converter behind every ``llm=`` of this package.

Every component of this package that calls an LLM takes, besides a litellm model string,
:class:`~rag_multihop.llm.LLMSettings` or :class:`~rag_multihop.llm.LLMClient`, any LlamaIndex
``LLM`` object (``OpenAI``, ``OpenAILike``, ``Ollama``, a ``CustomLLM`` of yours, ...). The
object is wrapped as a :class:`~rag_multihop.llm.ChatModel` and driven by the core client, so
timeouts, retries, the cache, the account and JSON repair still apply (details in
:mod:`rag_multihop.llm.chat`): calls go through ``chat`` / ``achat``; token counts are read
from the response (``additional_kwargs`` or ``raw``'s ``usage``, OpenAI or Anthropic names)
and estimated, marked so, when it has none; the object's own sampling settings stay in force.
A :class:`~llama_index.llms.rag_multihop.RagMultihopLLM` is not wrapped: its own client is
used.

Example:
    >>> from llama_index.core.llms import MockLLM
    >>> client = as_llm_client(MockLLM(max_tokens=2))
    >>> client.settings.model, client.complete("hi there").text
    ('llama_index/MockLLM/unknown', 'text text')
    >>> as_llm_client(object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: llm must be a litellm model string, ..., or a LlamaIndex LLM; got object
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.llms import LLM
from llama_index.llms.rag_multihop.base import RagMultihopLLM

from rag_multihop.llm import ChatReply, LLMClient, LLMSettings
from rag_multihop.llm.chat import ChatModel
from rag_multihop.llm.resolve import make_client
from rag_multihop.secrets import check_model_name

LLMLike = str | LLMSettings | LLMClient | LLM
"""What an ``llm=`` of this package takes."""

WRONG_TYPE = "llm must be a litellm model string, LLMSettings, LLMClient, or a LlamaIndex LLM"

_PROMPT_KEYS = ("prompt_tokens", "input_tokens")
_COMPLETION_KEYS = ("completion_tokens", "output_tokens")


class LlamaIndexChatModel:
    """A LlamaIndex ``LLM`` as a :class:`~rag_multihop.llm.ChatModel` (module docstring).

    Args:
        llm: the LlamaIndex LLM.
        model_id: the identity that keys the cache and names the model in accounts and errors
            (default ``llama_index/<class>/<metadata.model_name>``); give one that also names
            the sampling settings when two objects of one model sample differently.
    """

    def __init__(self, llm: LLM, *, model_id: str | None = None) -> None:
        if not isinstance(llm, LLM):
            raise TypeError(f"{WRONG_TYPE}; got {type(llm).__name__}")
        self.llm = llm
        default = f"llama_index/{type(llm).__name__}/{llm.metadata.model_name}"
        self.model_id = check_model_name(model_id or default, "model_id", kind="model identity")

    def __repr__(self) -> str:  # never the object's repr: it may hold a key
        return f"LlamaIndexChatModel({self.model_id!r})"

    def chat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        return chat_reply(self.llm.chat(_chat_messages(messages)))

    async def achat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        return chat_reply(await self.llm.achat(_chat_messages(messages)))


def as_llm_client(
    llm: object, api_base: str | None = None, api_key_env: str | None = None
) -> LLMClient:
    """The core :class:`~rag_multihop.llm.LLMClient` of an ``llm=`` of this package: a
    model string (with ``api_base`` / ``api_key_env``), settings, a client, a
    ``RagMultihopLLM`` (its client) or any LlamaIndex ``LLM`` (wrapped). Another type raises
    ``TypeError`` naming the type, never its repr."""
    if isinstance(llm, RagMultihopLLM):
        llm = llm.client
    elif isinstance(llm, LLM):
        llm = LlamaIndexChatModel(llm)
    elif not isinstance(llm, str | LLMSettings | LLMClient):
        raise TypeError(f"{WRONG_TYPE}; got {type(llm).__name__}")
    return make_client(llm, api_base=api_base, api_key_env=api_key_env)


def check_llm(llm: object) -> Any:
    """``llm`` when an ``llm=`` of this package takes it (a model string is checked for a
    pasted key, which is refused unseen); ``None`` stays ``None``."""
    if llm is None or isinstance(llm, LLMSettings | LLMClient | LLM):
        return llm
    if isinstance(llm, str):
        return check_model_name(llm, "llm")
    raise TypeError(f"{WRONG_TYPE}; got {type(llm).__name__}")


def llm_name(llm: object) -> str | None:
    """What names ``llm`` in serialised settings and events: a model string as is, else the
    model's identity (never a repr or a key)."""
    if llm is None or isinstance(llm, str):
        return llm
    if isinstance(llm, RagMultihopLLM):
        return llm.model_name
    if isinstance(llm, LLM):
        return LlamaIndexChatModel(llm).model_id
    if isinstance(llm, LLMClient):
        return llm.settings.model
    if isinstance(llm, LLMSettings):
        return llm.model
    if isinstance(llm, ChatModel):
        return llm.model_id
    raise TypeError(f"{WRONG_TYPE}; got {type(llm).__name__}")


def chat_reply(response: ChatResponse) -> ChatReply:
    """The text, token counts, finish reason and model of a LlamaIndex ``ChatResponse``."""
    prompt, completion = _usage(response.additional_kwargs)
    if prompt is None or completion is None:
        prompt, completion = _usage(_field(response.raw, "usage"))
    choices = _field(response.raw, "choices")
    first = choices[0] if isinstance(choices, list | tuple) and choices else None
    finish = _field(first, "finish_reason") or _field(response.raw, "stop_reason")
    return ChatReply(
        response.message.content,
        prompt_tokens=prompt,
        completion_tokens=completion,
        finish_reason=str(finish) if finish else None,
        model=str(_field(response.raw, "model") or ""),
    )


def _chat_messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
    return [ChatMessage(role=m["role"], content=m["content"]) for m in messages]


def _field(source: Any, name: str) -> Any:
    """``source[name]`` or ``source.name``; ``None`` when it has neither."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _usage(source: Any) -> tuple[int | None, int | None]:
    def first(keys: tuple[str, ...]) -> int | None:
        values = (_field(source, key) for key in keys)
        return next((int(v) for v in values if isinstance(v, int | float)), None)

    return first(_PROMPT_KEYS), first(_COMPLETION_KEYS)
