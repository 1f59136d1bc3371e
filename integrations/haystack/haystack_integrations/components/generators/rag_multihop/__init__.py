"""Haystack generators of rag-multihop.

- :class:`ChainAnswerGenerator`: CoopRAG's reasoning-chain completion and concise answer
  from retrieved documents (see ``docs/coop.md``).
- :class:`RagMultihopChatGenerator`: a chat generator over rag-multihop's ``LLMClient`` (any
  litellm model string or the embedded local model; every call accounted in the reply's meta).
- :class:`HaystackChatModel`: the other way round, any Haystack chat generator as
  rag-multihop's model (every ``llm=`` of this package takes a generator and wraps it so).

Example:
    >>> from haystack_integrations.components.generators.rag_multihop import (
    ...     ChainAnswerGenerator,
    ... )
    >>> ChainAnswerGenerator(llm="openai/gpt-4o-mini", top_k=3).top_k
    3
"""

from __future__ import annotations

from haystack_integrations.common.rag_multihop.chat_model import HaystackChatModel
from haystack_integrations.components.generators.rag_multihop.chain_answer import (
    ChainAnswerGenerator,
)
from haystack_integrations.components.generators.rag_multihop.chat import (
    RagMultihopChatGenerator,
)

__all__ = ["ChainAnswerGenerator", "HaystackChatModel", "RagMultihopChatGenerator"]
