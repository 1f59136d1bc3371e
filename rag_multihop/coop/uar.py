"""Unrolling-augmented retrieval (CoopRAG §3.3): search with the unrolled question.

:class:`UARRetriever` unrolls a query (:class:`~rag_multihop.coop.unroll.LLMUnroller`) and
asks any core retriever for candidates in one of two modes
(:data:`~rag_multihop.coop.settings.UAR_MODES`, the ``uar_mode`` of
:class:`~rag_multihop.coop.settings.CoopSettings`):

- ``"concatenate"`` (the paper): one search with :meth:`Unrolling.query_text` — the question,
  its sub-questions and the chain without masks;
- ``"sub-questions"``: one search for the question and one per sub-question, fused by
  :func:`~rag_multihop.fusion.core.fuse_candidates` (PIT calibration, linear fusion, equal
  weights).

Without an unroller (``unroller=None``) it searches the question alone: the LLM-free mode.
The base retriever must embed the texts it is given (a ``DenseRetriever`` with an encoder).
An unrolling that fell back to the raw question searches the question alone, flagged in the
unrolling's ``issues``. ``arun``/``aretrieve`` await the unroller's ``aunroll`` and run the
searches in a worker thread, off the event loop.

Example (a stand-in unroller; no LLM):
    >>> from rag_multihop import Candidate, Passage, Query
    >>> class Echo:  # any retriever: here, one candidate named by the words it was asked
    ...     def retrieve(self, query, k=10):
    ...         return [Candidate(Passage(f"{len(query.text.split())} words", "x"), 1.0)]
    >>> class Fixed:
    ...     def unroll(self, question):
    ...         return Unrolling(question, ("Who directed Rope?",)), None
    ...     async def aunroll(self, question):
    ...         return self.unroll(question)
    >>> uar = UARRetriever(Echo(), Fixed())
    >>> [c.id for c in uar.retrieve(Query("Where was the director of Rope born?"))]
    ['10 words']
    >>> uar.run(Query("Where was the director of Rope born?")).query_text
    'Where was the director of Rope born? Who directed Rope?'
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_multihop._settings import SettingsField, resolve_settings
from rag_multihop.coop.settings import UAR_MODES, CoopSettings
from rag_multihop.coop.unroll import Unroller, Unrolling, raw_question
from rag_multihop.fusion.core import fuse_candidates
from rag_multihop.fusion.settings import FusionSettings
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_positive_int

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount

__all__ = ["UAR_MODES", "UARResult", "UARRetriever", "fuse_searches"]

SEARCH_FUSION = FusionSettings(calibration="pit", fusion="linear")
"""How ``"sub-questions"`` fuses its searches: percentile ranks, averaged with equal weights."""


@dataclass(frozen=True)
class UARResult:
    """Candidates of one query with the unrolling they came from."""

    candidates: list[Candidate]
    unrolling: Unrolling
    query_text: str
    account: LLMAccount | None
    seconds: float


class UARRetriever:
    """Retrieves with the unrolled question (see the module docstring).

    Args:
        base: the first-stage retriever; it must embed the texts it is given.
        unroller: an :class:`~rag_multihop.coop.unroll.Unroller` (``unroll`` and ``aunroll``),
            e.g. :class:`~rag_multihop.coop.unroll.LLMUnroller`; ``None`` searches the
            question alone.
        settings: :class:`~rag_multihop.coop.settings.CoopSettings` (UAR reads ``uar_mode``).
        uar_mode: overrides ``settings.uar_mode``.
        masks: keep the chain's masks in the search text (the paper leaves them out).
    """

    uar_mode = SettingsField()

    def __init__(
        self,
        base: Retriever,
        unroller: Unroller | None = None,
        *,
        settings: CoopSettings | None = None,
        uar_mode: str | None = None,
        masks: bool = False,
    ) -> None:
        if not isinstance(base, Retriever):
            raise TypeError(f"base must be a Retriever (retrieve), got {type(base).__name__}")
        if unroller is not None and not isinstance(unroller, Unroller):
            raise TypeError(
                f"unroller must implement unroll and aunroll, got {type(unroller).__name__}"
            )
        if not isinstance(masks, bool):
            raise ValueError(f"masks must be True or False, got {masks!r}")
        self.settings = resolve_settings(CoopSettings, settings, uar_mode=uar_mode)
        self.base = base
        self.unroller = unroller
        self.masks = masks

    def unroll(self, query: Query) -> tuple[Unrolling, LLMAccount | None]:
        """The unrolling of ``query`` (the raw question without an unroller)."""
        if self.unroller is None:
            return raw_question(query.text.strip()), None
        return self.unroller.unroll(query.text)

    async def aunroll(self, query: Query) -> tuple[Unrolling, LLMAccount | None]:
        """The async twin of :meth:`unroll`."""
        if self.unroller is None:
            return raw_question(query.text.strip()), None
        return await self.unroller.aunroll(query.text)

    def search(self, query: Query, unrolling: Unrolling, k: int) -> tuple[list[Candidate], str]:
        """Candidates for an unrolling already made, and the text searched."""
        k = check_positive_int(k, "k")
        if self.settings.uar_mode == "concatenate" or not unrolling.sub_questions:
            text = unrolling.query_text(masks=self.masks)
            if text == query.text.strip():
                return self.base.retrieve(query, k=k), text  # keeps a precomputed embedding
            return self.base.retrieve(Query(text, id=query.id), k=k), text
        texts = [unrolling.question, *unrolling.sub_questions]
        return fuse_searches(self.base, query, texts, k), " | ".join(texts)

    def run(self, query: Query, k: int = 10) -> UARResult:
        start = time.perf_counter()
        unrolling, account = self.unroll(query)
        candidates, text = self.search(query, unrolling, k)
        return UARResult(candidates, unrolling, text, account, time.perf_counter() - start)

    async def arun(self, query: Query, k: int = 10) -> UARResult:
        """The async twin of :meth:`run`: the unroller awaited, the searches in a thread."""
        start = time.perf_counter()
        unrolling, account = await self.aunroll(query)
        candidates, text = await asyncio.to_thread(self.search, query, unrolling, k)
        return UARResult(candidates, unrolling, text, account, time.perf_counter() - start)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.run(query, k).candidates

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return (await self.arun(query, k)).candidates


def fuse_searches(base: Retriever, query: Query, texts: Sequence[str], k: int) -> list[Candidate]:
    """One search per text (the first is the question: its precomputed embedding is kept),
    fused by :func:`~rag_multihop.fusion.core.fuse_candidates` under :data:`SEARCH_FUSION`
    and ranked by :func:`~rag_multihop.types.rank_candidates` (ties by passage id); the
    candidates keep the base's signals and gain ``search_0``, ``search_0_cal``, ... and
    ``uar`` (the fused score)."""
    lists = {"search_0": base.retrieve(query, k=k)}
    for i, text in enumerate(texts[1:], start=1):
        lists[f"search_{i}"] = base.retrieve(Query(text, id=query.id), k=k)
    fused = fuse_candidates(lists, SEARCH_FUSION)
    return rank_candidates((c.with_score(c.score, uar=c.score) for c in fused), top_n=k)
