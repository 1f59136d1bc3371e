"""LlamaIndex LLM of rag-multihop: any litellm model string (or ``"local"``, the embedded
model) as a LlamaIndex chat ``LLM`` whose calls go through rag-multihop's ``LLMClient``, so
they are retried, bounded, cached when asked and counted (calls, tokens, cost, latency).

Example:
    >>> from llama_index.llms.rag_multihop import RagMultihopLLM
    >>> RagMultihopLLM("openai/gpt-4o-mini").metadata.model_name
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from llama_index.llms.rag_multihop.base import RagMultihopLLM

__all__ = ["RagMultihopLLM"]
