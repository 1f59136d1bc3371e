"""LlamaIndex LLM of rag-multihop: any litellm model string (or ``"local"``, the embedded
model) as a LlamaIndex chat ``LLM`` whose calls go through rag-multihop's ``LLMClient``, so
they are retried, bounded, cached when asked and counted (calls, tokens, cost, latency);
and the other way round, any LlamaIndex ``LLM`` as rag-multihop's model
(:class:`LlamaIndexChatModel`, :func:`as_llm_client`), which every ``llm=`` of this package
takes.

Example:
    >>> from llama_index.llms.rag_multihop import RagMultihopLLM
    >>> RagMultihopLLM("openai/gpt-4o-mini").metadata.model_name
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from llama_index.llms.rag_multihop.base import RagMultihopLLM
from llama_index.llms.rag_multihop.objects import LlamaIndexChatModel, as_llm_client

__all__ = ["LlamaIndexChatModel", "RagMultihopLLM", "as_llm_client"]
