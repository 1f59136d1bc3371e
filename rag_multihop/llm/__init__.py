"""The LLM layer: one client over litellm, prompts, structured replies, cache and accounting.

Importing this package is light: litellm is imported on the first call that reaches a
provider (``pip install 'rag-multihop[llm]'`` installs it, with pydantic). See
``docs/llm.md`` for provider setup, retries, the cache, accounting and the malformed-reply
fallback.

Modules: :mod:`.settings` (:class:`LLMSettings`), :mod:`.client` (:class:`LLMClient`),
:mod:`.retry` (the retry policy as pure functions), :mod:`._loop` (the background event loop
behind ``LLMClient.run``), :mod:`.transport` (one attempt through litellm), :mod:`.replies`,
:mod:`.streaming`, :mod:`.structured` (JSON replies), :mod:`.prompts`, :mod:`.cache`,
:mod:`.accounting`, :mod:`.errors`, :mod:`.local` (the embedded llama.cpp model),
:mod:`.local_transport` (its transport), :mod:`.chat` (a framework's LLM object as the
model: :class:`ChatModel` and its transport) and :mod:`.resolve` (what ``llm=`` accepts).

Example:
    >>> from rag_multihop.llm import LLMAccount, LLMSettings
    >>> LLMSettings("anthropic/claude-3-5-haiku-latest", api_key_env="ANTHROPIC_API_KEY").timeout
    60.0
    >>> sum([LLMAccount(calls=1, prompt_tokens=3), LLMAccount(cache_hits=1)]).calls
    1
"""

from __future__ import annotations

try:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.cache import LLMCache, default_cache_path
    from rag_multihop.llm.chat import ChatModel, ChatReply, ChatTransport
    from rag_multihop.llm.client import JSONReply, LLMClient, LLMReply, LLMSettings
    from rag_multihop.llm.errors import (
        LLMCallError,
        LLMConfigError,
        LLMError,
        LLMOutputError,
        ProviderError,
    )
    from rag_multihop.llm.transport import LiteLLMTransport, RawReply, Transport
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
    if exc.name != "pydantic":
        raise
    raise ImportError(
        "rag_multihop.llm needs pydantic; install it with: pip install 'rag-multihop[llm]'"
    ) from exc

__all__ = [
    "ChatModel",
    "ChatReply",
    "ChatTransport",
    "JSONReply",
    "LLMAccount",
    "LLMCache",
    "LLMCallError",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMOutputError",
    "LLMReply",
    "LLMSettings",
    "LiteLLMTransport",
    "ProviderError",
    "RawReply",
    "Transport",
    "default_cache_path",
]
