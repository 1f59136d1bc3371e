"""Deterministic fakes for the LlamaIndex integration's tests: an embed model over
:func:`rag_multihop.testing.hashing_vectors` (bag of words hashed into buckets; no model, no
network), and a user's own LLM (:class:`ScriptedLLM`). The rag-multihop encoder is
:class:`rag_multihop.testing.HashingEncoder`."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from rag_multihop.testing import hashing_vectors, polish_wedding_reply

__all__ = ["HashingEmbedding", "ScriptedLLM"]


class HashingEmbedding(BaseEmbedding):
    """:func:`hashing_vectors` as a LlamaIndex embed model (a user's own embedder)."""

    dim: int = 64

    def _get_query_embedding(self, query: str) -> list[float]:
        return hashing_vectors([query], self.dim)[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hashing_vectors([text], self.dim)[0].tolist()


class ScriptedLLM(CustomLLM):
    """A user's own LlamaIndex ``CustomLLM``: it answers the toy corpus's prompts right
    (:func:`rag_multihop.testing.polish_wedding_reply`), reports OpenAI-style usage in ``raw``
    (100 + 10 tokens) unless ``report_usage`` is off, and holds a key that its repr shows."""

    api_key: str = "sk-proj-" + "ScriptedSecret0" * 3
    report_usage: bool = True
    _prompts: list[str] = PrivateAttr(default_factory=list)

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-7b", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self._prompts.append(prompt)
        raw = None
        if self.report_usage:
            usage = {"prompt_tokens": 100, "completion_tokens": 10}
            raw = {"model": "scripted-7b", "usage": usage, "choices": [{"finish_reason": "stop"}]}
        return CompletionResponse(text=polish_wedding_reply(prompt), raw=raw)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self.complete(prompt).text
        yield CompletionResponse(text=text, delta=text)
