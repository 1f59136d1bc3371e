"""The one converter from what a component's ``llm=`` accepts to an :class:`LLMClient`.

Accepted: a litellm model string (with ``api_base`` / ``api_key_env``), an
:class:`~rag_multihop.llm.settings.LLMSettings`, a ready :class:`LLMClient`, or a
:class:`~rag_multihop.llm.chat.ChatModel` (a chat callable; the adapter packages wrap a
LlamaIndex ``LLM`` or a Haystack chat generator as one). Anything else raises ``TypeError``
naming the type only: a framework object's repr may hold its API key.

Example:
    >>> make_client("openai/gpt-4o-mini", api_key_env="OPENAI_API_KEY").settings.api_key_env
    'OPENAI_API_KEY'
    >>> make_client(3.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: llm must be a litellm model string, ..., or a chat model (...ChatModel); got float
"""

from __future__ import annotations

from rag_multihop.llm.chat import ChatModel, check_chat_model
from rag_multihop.llm.client import LLMClient
from rag_multihop.llm.settings import LLMSettings
from rag_multihop.secrets import check_model_name

_WRAPPERS = {
    "llama_index": "the LlamaIndex adapter's components take it directly, or wrap it with "
    "llama_index.llms.rag_multihop.LlamaIndexChatModel",
    "haystack": "the Haystack adapter's components take it directly, or wrap it with "
    "haystack_integrations.components.generators.rag_multihop.HaystackChatModel",
}


def make_client(
    llm: object,
    *,
    api_base: str | None = None,
    api_key_env: str | None = None,
    field: str = "llm",
) -> LLMClient:
    """An :class:`LLMClient` for ``llm`` (see the module docstring). ``api_base`` and
    ``api_key_env`` apply to a model string only; the key is read at call time."""
    if isinstance(llm, str):
        check_model_name(llm, field)  # named as the caller knows it; never echoes a key
        return LLMClient(LLMSettings(llm, api_base=api_base, api_key_env=api_key_env))
    if isinstance(llm, LLMClient):
        client = llm
    elif isinstance(llm, LLMSettings):
        client = LLMClient(llm)
    elif isinstance(llm, ChatModel):
        client = LLMClient.from_chat(check_chat_model(llm, field))
    else:
        raise TypeError(wrong_type_message(llm, field))
    if api_base is not None or api_key_env is not None:
        raise ValueError(
            "api_base and api_key_env apply to a model-string llm; set them on the LLMSettings "
            "or LLMClient you passed instead (a chat model holds its own endpoint and key)"
        )
    return client


def wrong_type_message(llm: object, field: str = "llm") -> str:
    """The ``TypeError`` message for an ``llm`` of no accepted type: its type name (never
    its repr) and, for a framework object, where its wrapper is."""
    message = (
        f"{field} must be a litellm model string, LLMSettings, LLMClient, or a chat model "
        f"(rag_multihop.llm.ChatModel); got {type(llm).__name__}"
    )
    package = type(llm).__module__.partition(".")[0]
    hint = _WRAPPERS.get(package)
    return f"{message} ({hint})" if hint else message
