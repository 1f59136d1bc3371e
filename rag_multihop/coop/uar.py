"""Unrolling-augmented retrieval (CoopRAG §3.3): search with the unrolled question.

:class:`UARRetriever` unrolls a query (:class:`~rag_multihop.coop.unroll.LLMUnroller`) and
asks any core retriever for candidates in one of two modes (:data:`UAR_MODES`):

- ``"concatenate"`` (the paper): one search with :meth:`Unrolling.query_text` — the question,
  its sub-questions and the chain without masks;
- ``"sub-questions"``: one search for the question and one per sub-question, fused by
  percentile rank (PIT calibration, linear fusion, equal weights).

Without an unroller (``unroller=None``) it searches the question alone: the LLM-free mode.
The base retriever must embed the texts it is given (a ``DenseRetriever`` with an encoder).
An unrolling that fell back to the raw question searches the question alone, flagged in the
unrolling's ``issues``.

Example (a stand-in unroller; no LLM):
    >>> from rag_multihop import Candidate, Passage, Query
    >>> class Echo:  # any retriever: here, one candidate named by the words it was asked
    ...     def retrieve(self, query, k=10):
    ...         return [Candidate(Passage(f"{len(query.text.split())} words", "x"), 1.0)]
    >>> class Fixed:
    ...     def unroll(self, question):
    ...         return Unrolling(question, ("Who directed Rope?",)), None
    >>> uar = UARRetriever(Echo(), Fixed())
    >>> [c.id for c in uar.retrieve(Query("Where was the director of Rope born?"))]
    ['10 words']
    >>> uar.run(Query("Where was the director of Rope born?")).query_text
    'Where was the director of Rope born? Who directed Rope?'
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rag_multihop.coop.unroll import Unrolling, raw_question
from rag_multihop.fusion.core import fuse_lists
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_positive_int

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount

UAR_MODES = ("concatenate", "sub-questions")


class Unroller(Protocol):
    """Anything that unrolls a question: ``unroll(question) -> (Unrolling, account or None)``."""

    def unroll(self, question: str) -> tuple[Unrolling, LLMAccount | None]: ...


@dataclass(frozen=True)
class UARResult:
    """Candidates of one query with the unrolling they came from."""

    candidates: list[Candidate]
    unrolling: Unrolling
    query_text: str
    account: LLMAccount | None
    seconds: float


class UARRetriever:
    """Retrieves with the unrolled question (see the module docstring)."""

    def __init__(
        self,
        base: Retriever,
        unroller: Any | None = None,
        *,
        mode: str = "concatenate",
        masks: bool = False,
    ) -> None:
        if mode not in UAR_MODES:
            raise ValueError(f"mode must be one of {list(UAR_MODES)}, got {mode!r}")
        if not isinstance(masks, bool):
            raise ValueError(f"masks must be True or False, got {masks!r}")
        self.base = base
        self.unroller = unroller
        self.mode = mode
        self.masks = masks

    def unroll(self, query: Query) -> tuple[Unrolling, LLMAccount | None]:
        """The unrolling of ``query`` (the raw question without an unroller)."""
        if self.unroller is None:
            return raw_question(query.text.strip()), None
        return self.unroller.unroll(query.text)

    async def aunroll(self, query: Query) -> tuple[Unrolling, LLMAccount | None]:
        """The async twin of :meth:`unroll` (unrollers without ``aunroll`` run synchronously)."""
        if self.unroller is None:
            return raw_question(query.text.strip()), None
        aunroll = getattr(self.unroller, "aunroll", None)
        if aunroll is None:
            return self.unroller.unroll(query.text)
        return await aunroll(query.text)

    def search(self, query: Query, unrolling: Unrolling, k: int) -> tuple[list[Candidate], str]:
        """Candidates for an unrolling already made, and the text searched."""
        check_positive_int(k, "k")
        if self.mode == "concatenate" or not unrolling.sub_questions:
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
        start = time.perf_counter()
        unrolling, account = await self.aunroll(query)
        candidates, text = self.search(query, unrolling, k)
        return UARResult(candidates, unrolling, text, account, time.perf_counter() - start)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.run(query, k).candidates


def fuse_searches(base: Retriever, query: Query, texts: Sequence[str], k: int) -> list[Candidate]:
    """One search per text (the first is the question: its precomputed embedding is kept),
    fused by percentile rank; signals ``search_0``, ``search_0_cal``, ... and ``uar``."""
    lists = [base.retrieve(query, k=k)]
    lists += [base.retrieve(Query(text, id=query.id), k=k) for text in texts[1:]]
    by_id = {c.id: c.passage for found in lists for c in found}
    fused = fuse_lists(
        [([c.id for c in found], [c.score for c in found]) for found in lists],
        calibration="pit",
        fusion="linear",
    )
    names = [f"search_{i}" for i in range(len(lists))]
    return rank_candidates(
        (
            Candidate(by_id[pid], float(score), signals={**fused.signals(row, names), "uar": score})
            for row, (pid, score) in enumerate(zip(fused.ids, fused.scores, strict=True))
        ),
        top_n=k,
    )
