"""Deterministic fakes for the Haystack integration's tests: text and document embedder
components over :func:`rag_multihop.testing.hashing_vectors` (bag of words hashed into
buckets; no model, no network), a user's own chat generator (:class:`ScriptedChatGenerator`),
a store slow to read (:class:`SlowStore`), a store whose reads return copies
(:class:`CopyingStore`) and :func:`longest_loop_stall`, which tells whether an awaited call
blocks the event loop. The rag-multihop encoder is
:class:`rag_multihop.testing.HashingEncoder`."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any, TypeVar

from haystack import Document, component
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from rag_multihop.testing import hashing_vectors, polish_wedding_reply

__all__ = [
    "CopyingStore",
    "HashingDocumentEmbedder",
    "HashingTextEmbedder",
    "ScriptedChatGenerator",
    "SlowStore",
    "longest_loop_stall",
]

T = TypeVar("T")


class SlowStore(InMemoryDocumentStore):
    """An in-memory store whose every ``filter_documents`` takes ``delay`` seconds of blocking
    I/O, as a remote store's does."""

    def __init__(self, delay: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        time.sleep(self.delay)
        return super().filter_documents(filters)


class CopyingStore(InMemoryDocumentStore):
    """An in-memory store whose reads return deep copies of its documents, as a store that
    deserialises them does (no document object, meta value or array is the stored one)."""

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        return copy.deepcopy(super().filter_documents(filters))


async def longest_loop_stall(work: Awaitable[T]) -> tuple[T, float, float]:
    """``work``'s result, the longest gap a ticker task on the same loop saw while it ran, and
    its duration: a call that blocks the loop shows a gap as long as itself."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            gaps.append(time.perf_counter() - start)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)  # the ticker is waiting on its first sleep
    start = time.perf_counter()
    result = await work
    duration = time.perf_counter() - start
    done.set()
    await ticker
    return result, max(gaps), duration


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
