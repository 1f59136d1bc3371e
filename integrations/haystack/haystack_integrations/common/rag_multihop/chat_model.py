"""A Haystack chat generator as rag-multihop's model: :class:`HaystackChatModel`, and the
checks and conversions behind every ``llm=`` of this package.

Every component of this package that calls an LLM takes, besides a litellm model string, a
Haystack chat generator: any component whose ``run(messages=[ChatMessage, ...])`` returns
``{"replies": [ChatMessage, ...]}`` (``OpenAIChatGenerator``, ``HuggingFaceAPIChatGenerator``,
``OllamaChatGenerator``, ours, ...). The generator is wrapped as a
:class:`~rag_multihop.llm.ChatModel` and driven by the core client, so timeouts, retries, the
cache, the account and JSON repair still apply (details in :mod:`rag_multihop.llm.chat`):
calls go through ``run`` (``run_async`` when the generator has it, else ``run`` in a worker
thread), after its ``warm_up`` once; token counts are read from the reply's
``meta["usage"]`` (OpenAI or Anthropic names) and estimated, marked so, when it has none; the
generator's own ``generation_kwargs`` stay in force. A
:class:`~haystack_integrations.components.generators.rag_multihop.RagMultihopChatGenerator`
is not wrapped: its own client is used. ``to_dict`` stores the generator as its own
component dict (so a pipeline's YAML round-trips), never a key.

Example:
    >>> from haystack import component
    >>> from haystack.dataclasses import ChatMessage
    >>> @component
    ... class Echo:
    ...     @component.output_types(replies=list[ChatMessage])
    ...     def run(self, messages: list[ChatMessage]):
    ...         return {"replies": [ChatMessage.from_assistant(messages[-1].text.upper())]}
    >>> client = llm_client(Echo(), None, None)
    >>> client.settings.model, client.complete("hi").text
    ('haystack/Echo', 'HI')
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from haystack.dataclasses import ChatMessage
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.convert import key_variable

from rag_multihop.llm import ChatReply
from rag_multihop.secrets import check_model_name

WRONG_TYPE = (
    "llm must be a litellm model string or a Haystack chat generator (a component with "
    "run(messages=[ChatMessage, ...]) returning {'replies': [...]})"
)

_PROMPT_KEYS = ("prompt_tokens", "input_tokens")
_COMPLETION_KEYS = ("completion_tokens", "output_tokens")
_ROLES = {
    "system": ChatMessage.from_system,
    "user": ChatMessage.from_user,
    "assistant": ChatMessage.from_assistant,
}


def is_chat_generator(llm: object) -> bool:
    """Whether ``llm`` has a ``run`` that takes ``messages``."""
    run = getattr(llm, "run", None)
    if not callable(run):
        return False
    try:
        return "messages" in inspect.signature(run).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


class HaystackChatModel:
    """A Haystack chat generator as a :class:`~rag_multihop.llm.ChatModel` (module docstring).

    Args:
        generator: the chat generator component.
        model_id: the identity that keys the cache and names the model in accounts and
            errors (default ``haystack/<class>/<generator.model>``); give one that also names
            the sampling settings when two generators of one model sample differently.
    """

    def __init__(self, generator: Any, *, model_id: str | None = None) -> None:
        if not is_chat_generator(generator):
            raise TypeError(f"{WRONG_TYPE}; got {type(generator).__name__}")
        self.generator = generator
        model = getattr(generator, "model", None)
        default = f"haystack/{type(generator).__name__}"
        if isinstance(model, str) and model:
            default += f"/{model}"
        self.model_id = check_model_name(model_id or default, "model_id", kind="model identity")
        self._warm = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the generator's repr: it may hold a key
        return f"HaystackChatModel({self.model_id!r})"

    def _ready(self) -> Any:
        with self._lock:
            if not self._warm:
                warm_up = getattr(self.generator, "warm_up", None)
                if callable(warm_up):
                    warm_up()
                self._warm = True
        return self.generator

    def chat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        return self._reply(self._ready().run(messages=_chat_messages(messages)))

    async def achat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        generator = await asyncio.to_thread(self._ready)
        run_async = getattr(generator, "run_async", None)
        if not callable(run_async):
            return await asyncio.to_thread(self.chat, messages)
        return self._reply(await run_async(messages=_chat_messages(messages)))

    def _reply(self, result: object) -> ChatReply:
        replies = result.get("replies") if isinstance(result, Mapping) else None
        if not isinstance(replies, list) or not all(isinstance(r, ChatMessage) for r in replies):
            raise TypeError(
                f"{type(self.generator).__name__}.run must return "
                f"{{'replies': [ChatMessage, ...]}}, got {type(result).__name__}"
                + (f" with keys {sorted(result)}" if isinstance(result, Mapping) else "")
            )
        if not replies:
            return ChatReply(None)
        reply = replies[0]
        meta = reply.meta or {}
        usage = meta.get("usage")
        cost = meta.get("cost")
        return ChatReply(
            reply.text,
            prompt_tokens=_count(usage, _PROMPT_KEYS),
            completion_tokens=_count(usage, _COMPLETION_KEYS),
            finish_reason=meta.get("finish_reason"),
            model=str(meta.get("model") or ""),
            cost=float(cost) if isinstance(cost, int | float) else None,
        )


def check_any_llm(llm: object) -> Any:
    """``llm``, a litellm model string (one that looks like a key is refused without being
    shown, so it never reaches ``to_dict``, a repr or a log) or a chat generator; else
    ``TypeError`` naming the type, never its repr."""
    if isinstance(llm, str):
        return check_model_name(llm, "llm")
    if is_chat_generator(llm):
        return llm
    raise TypeError(f"{WRONG_TYPE}; got {type(llm).__name__}")


def llm_to_dict(llm: Any) -> Any:
    """``llm`` for ``to_dict``: a model string as is, a generator as its own component dict
    (which ``default_from_dict`` turns back into the generator)."""
    if llm is None or isinstance(llm, str):
        return llm
    from haystack.core.serialization import component_to_dict

    return component_to_dict(llm, "llm")


def llm_client(llm: Any, api_base: str | None, api_key: Secret | None) -> Any:
    """The core :class:`~rag_multihop.llm.LLMClient` of a component's ``llm``: a litellm
    model string with ``api_base`` and the ``api_key`` secret (its variable is read at call
    time), or a chat generator (ours lends its client; another is wrapped)."""
    from haystack_integrations.components.generators.rag_multihop.chat import (
        RagMultihopChatGenerator,
    )

    from rag_multihop.llm.resolve import make_client

    if isinstance(llm, RagMultihopChatGenerator):
        llm = llm.client
    elif not isinstance(llm, str):
        llm = HaystackChatModel(check_any_llm(llm))
    return make_client(llm, api_base=api_base, api_key_env=key_variable(api_key))


def _chat_messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
    return [_ROLES[m["role"]](m["content"]) for m in messages]


def _count(usage: object, keys: tuple[str, ...]) -> int | None:
    if not isinstance(usage, Mapping):
        return None
    values = (usage.get(key) for key in keys)
    return next((int(v) for v in values if isinstance(v, int | float)), None)
