"""CoopRAG end to end: unroll, retrieve with the unrolled question, RaLa, KeyExtract, read.

For a question q (:meth:`CoopRAG.run`):

1. **Unroll** (LLM; skipped LLM-free): sub-questions and a masked reasoning chain
   (:mod:`~rag_multihop.coop.unroll`); an unusable reply falls back to q, flagged.
2. **UAR**: the base retriever's top ``candidates`` (K) for the unrolled question
   (:mod:`~rag_multihop.coop.uar`; ``uar_mode="sub-questions"`` fuses one search per
   sub-question by percentile rank).
3. **RaLa** (LLM-free; optional): the K candidates reranked against the unrolled question
   (:mod:`~rag_multihop.coop.rala`).
4. **KeyExtract** (optional, ``keyextract_rounds > 0``): while the top ``top_k`` passages do
   not answer q and rounds remain, one key sentence is appended to the search text and steps
   2-3 run again (:mod:`~rag_multihop.coop.keyextract`).
5. **Read** (LLM; optional): the chain completed from the top ``top_k`` passages, then a
   concise answer (:mod:`~rag_multihop.coop.reader`).

:class:`CoopTrace` records every stage: the unrolling and its issues, the texts searched,
the KeyExtract rounds and why they stopped, the completed chain, spans not found in the
passages, the answer, and per stage the seconds and the :class:`~rag_multihop.llm.accounting.
LLMAccount` (``account`` sums them: every call of the query).

Example (LLM-free: the question alone, a stand-in base retriever):
    >>> from rag_multihop import Candidate, Passage, Query
    >>> class Two:
    ...     def retrieve(self, query, k=10):
    ...         return [Candidate(Passage(i, "x"), 1.0 - n) for n, i in enumerate("ab")][:k]
    >>> result = CoopRAG(Two()).run(Query("Who directed Rope?"), k=2)
    >>> [c.id for c in result.candidates], result.answer, result.trace.stages
    (['a', 'b'], None, ('retrieve',))
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag_multihop.coop.keyextract import KeyExtractor, KeyRound, KeyStep
from rag_multihop.coop.reader import ChainReader, Reading
from rag_multihop.coop.settings import DEFAULT_CANDIDATES
from rag_multihop.coop.uar import UAR_MODES, UARRetriever
from rag_multihop.coop.unroll import Triple, Unrolling
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_choice, check_int

if TYPE_CHECKING:
    from rag_multihop.coop.rala import RaLaReranker
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.client import LLMClient, LLMSettings


@dataclass(frozen=True)
class CoopSettings:
    """Knobs of :class:`CoopRAG`.

    Attributes:
        candidates: K, the first-stage depth that RaLa reranks (100, the paper's).
        top_k: passages the reader and KeyExtract see (5).
        uar_mode: ``"concatenate"`` (the paper) or ``"sub-questions"`` (PIT-fused searches).
        keyextract_rounds: KeyExtract's round budget; 0 turns it off.
    """

    candidates: int = DEFAULT_CANDIDATES
    top_k: int = 5
    uar_mode: str = "concatenate"
    keyextract_rounds: int = 0

    def __post_init__(self) -> None:
        check_int(self.candidates, "candidates", low=1)
        check_int(self.top_k, "top_k", low=1)
        check_int(self.keyextract_rounds, "keyextract_rounds", low=0)
        check_choice(self.uar_mode, "uar_mode", UAR_MODES)


@dataclass(frozen=True)
class CoopTrace:
    """What happened to one query (see the module docstring)."""

    query_id: str
    unrolling: Unrolling
    search_texts: tuple[str, ...]
    rounds: tuple[KeyRound, ...] = ()
    stop: str | None = None
    reading: Reading | None = None
    accounts: dict[str, LLMAccount] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(self.seconds)

    @property
    def account(self) -> LLMAccount | None:
        """Every LLM call of the query summed (``None`` when none was made)."""
        if not self.accounts:
            return None
        values = list(self.accounts.values())
        return sum(values[1:], values[0])

    @property
    def fallbacks(self) -> int:
        """Stages that fell back after an unusable reply."""
        count = int(self.unrolling.fallback)
        if self.reading is not None:
            count += sum("unusable" in issue for issue in self.reading.issues)
        return count + sum(r.issue == "unusable reply" for r in self.rounds)

    def to_dict(self) -> dict[str, Any]:
        reading = self.reading
        return {
            "query_id": self.query_id,
            "unrolling": self.unrolling.to_dict(),
            "search_texts": list(self.search_texts),
            "keyextract": [dataclasses.asdict(r) for r in self.rounds],
            "stop": self.stop,
            "completed_chain": None
            if reading is None
            else [[t.head, t.relation, t.tail] for t in reading.chain],
            "answer": None if reading is None else reading.answer,
            "unsupported_spans": None if reading is None else list(reading.unsupported),
            "reading_issues": None if reading is None else list(reading.issues),
            "accounts": {k: v.to_dict() for k, v in self.accounts.items()},
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
        }


@dataclass(frozen=True)
class CoopResult:
    candidates: list[Candidate]
    trace: CoopTrace

    @property
    def answer(self) -> str | None:
        return None if self.trace.reading is None else self.trace.reading.answer

    @property
    def chain(self) -> tuple[Triple, ...]:
        reading = self.trace.reading
        return self.trace.unrolling.chain if reading is None else reading.chain


class CoopRAG:
    """CoopRAG over any core retriever (see the module docstring).

    Args:
        base: the first-stage retriever; it must embed the texts it is given.
        unroller: an :class:`~rag_multihop.coop.unroll.LLMUnroller` (``None``: LLM-free).
        reranker: a :class:`~rag_multihop.coop.rala.RaLaReranker` (``None``: no reranking).
        reader: a :class:`~rag_multihop.coop.reader.ChainReader` (``None``: no answer).
        key_extractor: an LLM or similarity key extractor, used when
            ``settings.keyextract_rounds > 0``.
        settings: :class:`CoopSettings`; keyword overrides replace single fields.
    """

    def __init__(
        self,
        base: Retriever,
        *,
        unroller: Any | None = None,
        reranker: RaLaReranker | None = None,
        reader: ChainReader | None = None,
        key_extractor: KeyExtractor | None = None,
        settings: CoopSettings | None = None,
        **overrides: Any,
    ) -> None:
        self.settings = dataclasses.replace(settings or CoopSettings(), **overrides)
        if self.settings.keyextract_rounds and key_extractor is None:
            raise ValueError("keyextract_rounds > 0 needs a key_extractor")
        self.uar = UARRetriever(base, unroller, mode=self.settings.uar_mode)
        self.reranker = reranker
        self.reader = reader
        self.key_extractor = key_extractor

    @classmethod
    def with_llm(
        cls,
        base: Retriever,
        llm: str | LLMSettings | LLMClient,
        *,
        reranker: RaLaReranker | None = None,
        keyextract: bool = False,
        settings: CoopSettings | None = None,
        **overrides: Any,
    ) -> CoopRAG:
        """The full method with one LLM for unrolling, reading and (when ``keyextract``)
        KeyExtract; ``llm`` is a litellm model string, ``"local"``, settings or a client."""
        from rag_multihop.coop.keyextract import LLMKeyExtractor
        from rag_multihop.coop.unroll import LLMUnroller
        from rag_multihop.llm.client import LLMClient

        client = llm if isinstance(llm, LLMClient) else LLMClient(llm)
        settings = dataclasses.replace(settings or CoopSettings(), **overrides)
        if keyextract and not settings.keyextract_rounds:
            settings = dataclasses.replace(settings, keyextract_rounds=2)
        return cls(
            base,
            unroller=LLMUnroller(client),
            reranker=reranker,
            reader=ChainReader(client, top_k=settings.top_k),
            key_extractor=LLMKeyExtractor(client) if keyextract else None,
            settings=settings,
        )

    # ------------------------------------------------------------------ stages

    def _search(self, query: Query, unrolling: Unrolling, k: int) -> tuple[list[Candidate], str]:
        """UAR's candidates for the unrolled question, reranked by RaLa against its text."""
        candidates, text = self.uar.search(query, unrolling, max(k, self.settings.candidates))
        return self._rerank(query, text, candidates), text

    def _search_text(self, query: Query, text: str, k: int) -> list[Candidate]:
        """A KeyExtract round's search: the extended text, reranked by RaLa against it."""
        depth = max(k, self.settings.candidates)
        return self._rerank(query, text, self.uar.base.retrieve(Query(text, id=query.id), depth))

    def _rerank(self, query: Query, text: str, candidates: list[Candidate]) -> list[Candidate]:
        if self.reranker is None:
            return candidates
        return self.reranker.rerank(Query(text, id=query.id), candidates)

    def _next_text(self, text: str, step: KeyStep) -> str | None:
        return f"{text} {step.sentence}" if step.sentence and step.sentence not in text else None

    def run(self, query: Query | str, k: int = 10, *, read: bool = True) -> CoopResult:
        """Candidates (at most ``k``) and, with a reader and ``read``, the answer."""
        query = _as_query(query)
        check_int(k, "k", low=1)
        seconds: dict[str, float] = {}
        accounts: dict[str, LLMAccount] = {}
        clock = time.perf_counter()
        unrolling, account = self.uar.unroll(query)
        if self.uar.unroller is not None:
            seconds["unroll"] = time.perf_counter() - clock
            _add(accounts, "unroll", account)
        clock = time.perf_counter()
        candidates, text = self._search(query, unrolling, k)
        seconds["retrieve"] = time.perf_counter() - clock
        texts, rounds, stop = [text], [], None
        if self.key_extractor is not None and self.settings.keyextract_rounds:
            clock = time.perf_counter()
            for _ in range(self.settings.keyextract_rounds):
                step = self.key_extractor.extract(text, _passages(candidates, self.settings.top_k))
                rounds.append(_round(text, candidates, self.settings.top_k, step))
                _add(accounts, f"keyextract_{len(rounds)}", step.account)
                stop, following = _verdict(step, self._next_text(text, step))
                if following is None:
                    break
                text = following
                candidates = self._search_text(query, text, k)
                texts.append(text)
            stop = stop or "budget"
            seconds["keyextract"] = time.perf_counter() - clock
        reading = None
        if self.reader is not None and read and candidates:
            clock = time.perf_counter()
            reading = self.reader.read(unrolling, _passages(candidates, self.settings.top_k))
            seconds["read"] = time.perf_counter() - clock
            accounts.update(reading.calls)
        trace = CoopTrace(
            str(query.id), unrolling, tuple(texts), tuple(rounds), stop, reading, accounts, seconds
        )
        return CoopResult(candidates[:k], trace)

    async def arun(self, query: Query | str, k: int = 10, *, read: bool = True) -> CoopResult:
        """The async twin of :meth:`run` (LLM calls awaited; searches run in this thread)."""
        query = _as_query(query)
        check_int(k, "k", low=1)
        seconds: dict[str, float] = {}
        accounts: dict[str, LLMAccount] = {}
        clock = time.perf_counter()
        unrolling, account = await self.uar.aunroll(query)
        if self.uar.unroller is not None:
            seconds["unroll"] = time.perf_counter() - clock
            _add(accounts, "unroll", account)
        clock = time.perf_counter()
        candidates, text = self._search(query, unrolling, k)
        seconds["retrieve"] = time.perf_counter() - clock
        texts, rounds, stop = [text], [], None
        extractor = self.key_extractor
        if extractor is not None and self.settings.keyextract_rounds:
            clock = time.perf_counter()
            for _ in range(self.settings.keyextract_rounds):
                passages = _passages(candidates, self.settings.top_k)
                aextract = getattr(extractor, "aextract", None)
                step = (
                    await aextract(text, passages)
                    if aextract is not None
                    else extractor.extract(text, passages)
                )
                rounds.append(_round(text, candidates, self.settings.top_k, step))
                _add(accounts, f"keyextract_{len(rounds)}", step.account)
                stop, following = _verdict(step, self._next_text(text, step))
                if following is None:
                    break
                text = following
                candidates = self._search_text(query, text, k)
                texts.append(text)
            stop = stop or "budget"
            seconds["keyextract"] = time.perf_counter() - clock
        reading = None
        if self.reader is not None and read and candidates:
            clock = time.perf_counter()
            reading = await self.reader.aread(unrolling, _passages(candidates, self.settings.top_k))
            seconds["read"] = time.perf_counter() - clock
            accounts.update(reading.calls)
        trace = CoopTrace(
            str(query.id), unrolling, tuple(texts), tuple(rounds), stop, reading, accounts, seconds
        )
        return CoopResult(candidates[:k], trace)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The candidates alone (no reading): a core ``Retriever``."""
        return self.run(query, k, read=False).candidates


def _as_query(query: Query | str) -> Query:
    return Query(query) if isinstance(query, str) else query


def _add(accounts: dict[str, LLMAccount], stage: str, account: LLMAccount | None) -> None:
    if account is not None:
        accounts[stage] = account


def _passages(candidates: Sequence[Candidate], top_k: int) -> list[Any]:
    return [c.passage for c in candidates[:top_k]]


def _round(text: str, candidates: Sequence[Candidate], top_k: int, step: KeyStep) -> KeyRound:
    return KeyRound(
        text, tuple(c.id for c in candidates[:top_k]), step.answerable, step.sentence, step.issue
    )


def _verdict(step: KeyStep, following: str | None) -> tuple[str | None, str | None]:
    """(why the loop stops, or None; the next search text, or None to stop)."""
    if step.issue == "unusable reply":
        return "unusable reply", None
    if step.answerable:
        return "answerable", None
    if following is None:
        return "no new sentence", None
    return None, following
