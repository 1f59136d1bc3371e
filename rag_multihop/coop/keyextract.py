"""KeyExtract (CoopRAG appendix C.3): judge, extract one key sentence, search again.

Each round looks at the top-k passages of the current search. An extractor answers two
things: can the question be answered from them, and if not, which one sentence of them says
what to look for next. The sentence is appended to the search text and the search runs
again, until the passages suffice, no new sentence comes, or the round budget ends it (each
:class:`KeyRound` of the trace says which).

- :class:`LLMKeyExtractor`: one call per round
  (:data:`~rag_multihop.llm.prompts.KEY_EXTRACTION`, reply ``{answerable, key_sentence}``);
  a key sentence that is not in the passages is flagged and not appended; an unusable reply
  ends the loop (``stop="unusable reply"``) unless ``on_error="raise"``.
- :class:`SimilarityKeyExtractor` (LLM-free): the passages' sentence most similar to the
  current search text (encoder cosine) that the text does not hold yet. It never judges the
  passages sufficient, so the budget always ends it.

Example (LLM-free, a toy encoder):
    >>> split_sentences("Rope is a 1948 film. It was directed by Alfred Hitchcock.")
    ['Rope is a 1948 film.', 'It was directed by Alfred Hitchcock.']
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from rag_multihop.coop.reader import in_passages
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Passage

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.client import LLMClient

logger = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
STOP_REASONS = ("answerable", "budget", "no new sentence", "unusable reply")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after ``.``, ``!`` or ``?`` before a capital or digit)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@dataclass(frozen=True)
class KeyStep:
    """An extractor's verdict on one round's passages."""

    answerable: bool
    sentence: str
    account: LLMAccount | None = None
    issue: str | None = None


@runtime_checkable
class KeyExtractor(Protocol):
    """One KeyExtract round's verdict, synchronously and asynchronously:
    ``extract(search_text, passages) -> KeyStep`` and its awaitable twin ``aextract``."""

    def extract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep: ...

    async def aextract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep: ...


@dataclass
class LLMKeyExtractor:
    """Judges and extracts with one LLM call per round (see the module docstring)."""

    client: LLMClient
    max_chars: int | None = 1000
    max_tokens: int = 160
    on_error: Literal["stop", "raise"] = "stop"
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.on_error not in ("stop", "raise"):
            raise ValueError(f"on_error must be 'stop' or 'raise', got {self.on_error!r}")

    def _step(self, value: object, account: LLMAccount, passages: Sequence[Passage]) -> KeyStep:
        answerable = bool(getattr(value, "answerable", False))
        sentence = str(getattr(value, "key_sentence", ""))
        if answerable or not sentence:
            return KeyStep(answerable, "", account)
        if not in_passages(sentence, passages):
            return KeyStep(False, "", account, "the key sentence is not in the passages; ignored")
        return KeyStep(False, sentence, account)

    def extract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep:
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import KeyExtraction, format_key_extraction

        messages = format_key_extraction(search_text, passages, max_chars=self.max_chars)
        try:
            reply = self.client.complete_json(messages, KeyExtraction, max_tokens=self.max_tokens)
        except LLMOutputError as exc:
            return self._failed(exc)
        return self._step(reply.value, reply.account, passages)

    async def aextract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep:
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import KeyExtraction, format_key_extraction

        messages = format_key_extraction(search_text, passages, max_chars=self.max_chars)
        try:
            reply = await self.client.acomplete_json(
                messages, KeyExtraction, max_tokens=self.max_tokens
            )
        except LLMOutputError as exc:
            return self._failed(exc)
        return self._step(reply.value, reply.account, passages)

    def _failed(self, error: Exception) -> KeyStep:
        self.failures += 1
        if self.on_error == "raise":
            raise error
        logger.warning("KeyExtract reply unusable (%s); stopping the rounds", error)
        return KeyStep(False, "", getattr(error, "account", None), "unusable reply")


class SimilarityKeyExtractor:
    """LLM-free: the most similar sentence the search text does not hold yet."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder

    def extract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep:
        sentences = list(
            dict.fromkeys(
                s for p in passages for s in split_sentences(p.text) if s not in search_text
            )
        )
        if not sentences:
            return KeyStep(False, "")
        vectors = self.encoder.encode([search_text, *sentences])
        best = int(np.argmax(vectors[1:] @ vectors[0]))
        return KeyStep(False, sentences[best])

    async def aextract(self, search_text: str, passages: Sequence[Passage]) -> KeyStep:
        """:meth:`extract` in a worker thread (the encoder runs off the event loop)."""
        return await asyncio.to_thread(self.extract, search_text, passages)


@dataclass(frozen=True)
class KeyRound:
    """One round: the text searched, the top passages' ids, and the extractor's verdict."""

    search_text: str
    top_ids: tuple[str, ...]
    answerable: bool
    sentence: str
    issue: str | None = None
