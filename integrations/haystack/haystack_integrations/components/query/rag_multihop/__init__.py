"""Haystack query components of rag-multihop.

- :class:`QuestionUnroller`: CoopRAG's question unrolling (sub-questions and a masked
  reasoning chain) into an augmented query for any retriever (see ``docs/coop.md``).

Example:
    >>> from haystack_integrations.components.query.rag_multihop import QuestionUnroller
    >>> QuestionUnroller(llm="openai/gpt-4o-mini").llm
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from haystack_integrations.components.query.rag_multihop.unroller import QuestionUnroller

__all__ = ["QuestionUnroller"]
