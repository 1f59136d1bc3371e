"""Deterministic fakes for the Haystack integration's tests: text and document embedder
components over :func:`rag_multihop.testing.hashing_vectors` (bag of words hashed into
buckets; no model, no network), and a user's own chat generator (:class:`ScriptedChatGenerator`).
The rag-multihop encoder is :class:`rag_multihop.testing.HashingEncoder`."""

from __future__ import annotations

from dataclasses import replace

from haystack import Document, component
from haystack.dataclasses import ChatMessage

from rag_multihop.testing import hashing_vectors, polish_wedding_reply

__all__ = ["HashingDocumentEmbedder", "HashingTextEmbedder", "ScriptedChatGenerator"]


@component
class HashingTextEmbedder:
    """A user's own Haystack text embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        self.runs += 1
        return {"embedding": hashing_vectors([text], self.dim)[0].tolist()}


@component
class HashingDocumentEmbedder:
    """A user's own Haystack document embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.runs += 1
        vectors = hashing_vectors([d.content or "" for d in documents], self.dim)
        return {
            "documents": [
                replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors, strict=True)
            ]
        }


@component
class ScriptedChatGenerator:
    """A user's own Haystack chat generator (sync ``run`` only): it answers the toy corpus's
    prompts right (:func:`rag_multihop.testing.polish_wedding_reply`) and reports OpenAI-style
    usage (100 + 10 tokens) in the reply's meta unless ``report_usage`` is off."""

    def __init__(self, model: str = "scripted-7b", report_usage: bool = True) -> None:
        self.model = model
        self.report_usage = report_usage
        self.prompts: list[str] = []
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        prompt = messages[-1].text or ""
        self.prompts.append(prompt)
        meta: dict = {"model": self.model, "finish_reason": "stop"}
        if self.report_usage:
            meta["usage"] = {"prompt_tokens": 100, "completion_tokens": 10}
        return {"replies": [ChatMessage.from_assistant(polish_wedding_reply(prompt), meta=meta)]}
