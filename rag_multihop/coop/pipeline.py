"""CoopRAG end to end: unroll, retrieve with the unrolled question, RaLa, KeyExtract, read.

For a question q (:meth:`CoopRetriever.run`; ``CoopRAG`` is its deprecated old name):

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
    >>> result = CoopRetriever(Two()).run(Query("Who directed Rope?"), k=2)
    >>> [c.id for c in result.candidates], result.answer, result.trace.stages
    (['a', 'b'], None, ('retrieve',))
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag_multihop._settings import resolve_settings
from rag_multihop.coop.keyextract import KeyExtractor, KeyRound, KeyStep
from rag_multihop.coop.reader import ChainReader, Reading
from rag_multihop.coop.settings import CoopSettings
from rag_multihop.coop.uar import UARRetriever
from rag_multihop.coop.unroll import Triple, Unroller, Unrolling
from rag_multihop.protocols import Retriever
from rag_multihop.tracing import NoSpan, Span, span
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int

if TYPE_CHECKING:
    from rag_multihop.coop.rala import RaLaReranker
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.chat import ChatModel
    from rag_multihop.llm.client import LLMClient, LLMSettings

__all__ = ["CoopResult", "CoopRetriever", "CoopSettings", "CoopTrace"]


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


class CoopRetriever:
    """CoopRAG over any core retriever (see the module docstring).

    Args:
        base: the first-stage retriever; it must embed the texts it is given.
        settings: :class:`~rag_multihop.coop.settings.CoopSettings`.
        candidates, top_k, uar_mode, keyextract_rounds: override the same-named field of
            ``settings`` (``None`` keeps it).
        unroller: an :class:`~rag_multihop.coop.unroll.Unroller` such as
            :class:`~rag_multihop.coop.unroll.LLMUnroller` (``None``: LLM-free).
        reranker: a :class:`~rag_multihop.coop.rala.RaLaReranker` (``None``: no reranking).
        reader: a :class:`~rag_multihop.coop.reader.ChainReader` (``None``: no answer).
        key_extractor: a :class:`~rag_multihop.coop.keyextract.KeyExtractor` (LLM or
            similarity), needed when ``keyextract_rounds > 0``.
    """

    def __init__(
        self,
        base: Retriever,
        *,
        settings: CoopSettings | None = None,
        candidates: int | None = None,
        top_k: int | None = None,
        uar_mode: str | None = None,
        keyextract_rounds: int | None = None,
        unroller: Unroller | None = None,
        reranker: RaLaReranker | None = None,
        reader: ChainReader | None = None,
        key_extractor: KeyExtractor | None = None,
    ) -> None:
        self.settings = resolve_settings(
            CoopSettings,
            settings,
            candidates=candidates,
            top_k=top_k,
            uar_mode=uar_mode,
            keyextract_rounds=keyextract_rounds,
        )
        if self.settings.keyextract_rounds and key_extractor is None:
            raise ValueError("keyextract_rounds > 0 needs a key_extractor")
        if key_extractor is not None and not isinstance(key_extractor, KeyExtractor):
            raise TypeError(
                "key_extractor must implement extract and aextract, got "
                f"{type(key_extractor).__name__}"
            )
        self.uar = UARRetriever(base, unroller, settings=self.settings)
        self.reranker = reranker
        self.reader = reader
        self.key_extractor = key_extractor

    @classmethod
    def with_llm(
        cls,
        base: Retriever,
        llm: str | LLMSettings | LLMClient | ChatModel,
        *,
        reranker: RaLaReranker | None = None,
        keyextract: bool = False,
        settings: CoopSettings | None = None,
        candidates: int | None = None,
        top_k: int | None = None,
        uar_mode: str | None = None,
        keyextract_rounds: int | None = None,
    ) -> CoopRetriever:
        """The full method with one LLM for unrolling, reading and (when ``keyextract``)
        KeyExtract (2 rounds unless ``keyextract_rounds`` says otherwise); ``llm`` is a
        litellm model string, ``"local"``, settings, a client or a
        :class:`~rag_multihop.llm.chat.ChatModel` (a framework's LLM object, wrapped)."""
        from rag_multihop.coop.keyextract import LLMKeyExtractor
        from rag_multihop.coop.unroll import LLMUnroller
        from rag_multihop.llm.resolve import make_client

        client = make_client(llm)
        settings = resolve_settings(
            CoopSettings,
            settings,
            candidates=candidates,
            top_k=top_k,
            uar_mode=uar_mode,
            keyextract_rounds=keyextract_rounds,
        )
        if keyextract and not settings.keyextract_rounds:
            settings = dataclasses.replace(settings, keyextract_rounds=2)
        return cls(
            base,
            settings=settings,
            unroller=LLMUnroller(client),
            reranker=reranker,
            reader=ChainReader(client, top_k=settings.top_k),
            key_extractor=LLMKeyExtractor(client) if keyextract else None,
        )

    # ------------------------------------------------------------------ stages

    def _search(self, query: Query, unrolling: Unrolling, k: int) -> tuple[list[Candidate], str]:
        """UAR's candidates for the unrolled question, reranked against its text."""
        depth = max(k, self.settings.candidates)
        with span("coop.retrieve", k=depth, uar_mode=self.settings.uar_mode) as record:
            candidates, text = self.uar.search(query, unrolling, depth)
            record.set(candidates=len(candidates))
        return self._rerank(query, text, candidates), text

    def _search_text(self, query: Query, text: str, k: int) -> list[Candidate]:
        """A KeyExtract round's search: the extended text, reranked against it."""
        depth = max(k, self.settings.candidates)
        with span("coop.retrieve", k=depth, uar_mode="keyextract") as record:
            found = self.uar.base.retrieve(Query(text, id=query.id), depth)
            record.set(candidates=len(found))
        return self._rerank(query, text, found)

    def _rerank(self, query: Query, text: str, candidates: list[Candidate]) -> list[Candidate]:
        if self.reranker is None:
            return candidates
        with span("coop.rerank", candidates=len(candidates)):
            return self.reranker.rerank(Query(text, id=query.id), candidates)

    def _next_text(self, text: str, step: KeyStep) -> str | None:
        return f"{text} {step.sentence}" if step.sentence and step.sentence not in text else None

    def _passages(self, candidates: Sequence[Candidate]) -> list[Passage]:
        return [c.passage for c in candidates[: self.settings.top_k]]

    def run(self, query: Query | str, k: int = 10, *, read: bool = True) -> CoopResult:
        """Candidates (at most ``k``) and, with a reader and ``read``, the answer."""
        query = _as_query(query)
        k = check_positive_int(k, "k")
        with span("coop.run", k=k) as record:
            return _finished(record, self._run(query, k, read))

    def _run(self, query: Query, k: int, read: bool) -> CoopResult:
        seconds: dict[str, float] = {}
        accounts: dict[str, LLMAccount] = {}
        clock = time.perf_counter()
        with span("coop.unroll", llm=self.uar.unroller is not None) as stage:
            unrolling, account = self.uar.unroll(query)
            _unrolled(stage, unrolling, account)
        if self.uar.unroller is not None:
            seconds["unroll"] = time.perf_counter() - clock
            _add(accounts, "unroll", account)
        clock = time.perf_counter()
        candidates, text = self._search(query, unrolling, k)
        seconds["retrieve"] = time.perf_counter() - clock
        texts, rounds, stop = [text], list[KeyRound](), None
        if self.key_extractor is not None and self.settings.keyextract_rounds:
            clock = time.perf_counter()
            for _ in range(self.settings.keyextract_rounds):
                with span("coop.keyextract", round=len(rounds) + 1) as stage:
                    step = self.key_extractor.extract(text, self._passages(candidates))
                    _stepped(stage, step)
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
            with span("coop.read", passages=len(self._passages(candidates))) as stage:
                reading = self.reader.read(unrolling, self._passages(candidates))
                _read(stage, reading)
            seconds["read"] = time.perf_counter() - clock
            accounts.update(reading.calls)
        trace = CoopTrace(
            str(query.id), unrolling, tuple(texts), tuple(rounds), stop, reading, accounts, seconds
        )
        return CoopResult(candidates[:k], trace)

    async def arun(self, query: Query | str, k: int = 10, *, read: bool = True) -> CoopResult:
        """The async twin of :meth:`run`: LLM calls awaited, searches and reranking in a
        worker thread (the event loop is never blocked by them)."""
        query = _as_query(query)
        k = check_positive_int(k, "k")
        with span("coop.run", k=k) as record:
            return _finished(record, await self._arun(query, k, read))

    async def _arun(self, query: Query, k: int, read: bool) -> CoopResult:
        seconds: dict[str, float] = {}
        accounts: dict[str, LLMAccount] = {}
        clock = time.perf_counter()
        with span("coop.unroll", llm=self.uar.unroller is not None) as stage:
            unrolling, account = await self.uar.aunroll(query)
            _unrolled(stage, unrolling, account)
        if self.uar.unroller is not None:
            seconds["unroll"] = time.perf_counter() - clock
            _add(accounts, "unroll", account)
        clock = time.perf_counter()
        candidates, text = await asyncio.to_thread(self._search, query, unrolling, k)
        seconds["retrieve"] = time.perf_counter() - clock
        texts, rounds, stop = [text], list[KeyRound](), None
        if self.key_extractor is not None and self.settings.keyextract_rounds:
            clock = time.perf_counter()
            for _ in range(self.settings.keyextract_rounds):
                with span("coop.keyextract", round=len(rounds) + 1) as stage:
                    step = await self.key_extractor.aextract(text, self._passages(candidates))
                    _stepped(stage, step)
                rounds.append(_round(text, candidates, self.settings.top_k, step))
                _add(accounts, f"keyextract_{len(rounds)}", step.account)
                stop, following = _verdict(step, self._next_text(text, step))
                if following is None:
                    break
                text = following
                candidates = await asyncio.to_thread(self._search_text, query, text, k)
                texts.append(text)
            stop = stop or "budget"
            seconds["keyextract"] = time.perf_counter() - clock
        reading = None
        if self.reader is not None and read and candidates:
            clock = time.perf_counter()
            with span("coop.read", passages=len(self._passages(candidates))) as stage:
                reading = await self.reader.aread(unrolling, self._passages(candidates))
                _read(stage, reading)
            seconds["read"] = time.perf_counter() - clock
            accounts.update(reading.calls)
        trace = CoopTrace(
            str(query.id), unrolling, tuple(texts), tuple(rounds), stop, reading, accounts, seconds
        )
        return CoopResult(candidates[:k], trace)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The candidates alone (no reading): a core ``Retriever``."""
        return self.run(query, k, read=False).candidates

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The async twin of :meth:`retrieve`."""
        return (await self.arun(query, k, read=False)).candidates


def deprecated_name(name: str, module: str) -> type[CoopRetriever]:
    """:class:`CoopRetriever` for ``CoopRAG``, its old name, with a ``DeprecationWarning``
    pointing at the caller's import; ``AttributeError`` for any other missing ``name``."""
    if name != "CoopRAG":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        "CoopRAG is deprecated; use rag_multihop.coop.CoopRetriever (the same class, renamed)",
        DeprecationWarning,
        stacklevel=3,
    )
    return CoopRetriever


def __getattr__(name: str) -> Any:
    return deprecated_name(name, __name__)


def _as_query(query: Query | str) -> Query:
    return Query(query) if isinstance(query, str) else query


def _add(accounts: dict[str, LLMAccount], stage: str, account: LLMAccount | None) -> None:
    if account is not None:
        accounts[stage] = account


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


def _unrolled(stage: Span | NoSpan, unrolling: Unrolling, account: LLMAccount | None) -> None:
    if not stage.recording:
        return
    stage.set(
        sub_questions=len(unrolling.sub_questions),
        masked=unrolling.masked,
        fallback=unrolling.fallback,
    )
    if account is not None:
        stage.set(llm_calls=account.calls, llm_tokens=account.total_tokens)


def _stepped(stage: Span | NoSpan, step: KeyStep) -> None:
    if not stage.recording:
        return
    stage.set(answerable=step.answerable, sentence_found=bool(step.sentence))
    if step.issue is not None:
        stage.set(issue=step.issue)


def _read(stage: Span | NoSpan, reading: Reading) -> None:
    if not stage.recording:
        return
    stage.set(answered=bool(reading.answer), issues=len(reading.issues))


def _finished(record: Span | NoSpan, result: CoopResult) -> CoopResult:
    """``result`` with its counts (candidates, KeyExtract rounds, LLM calls and tokens)."""
    if not record.recording:
        return result
    trace = result.trace
    record.set(returned=len(result.candidates), keyextract_rounds=len(trace.rounds))
    if trace.stop is not None:
        record.set(keyextract_stop=trace.stop)
    account = trace.account
    if account is not None:
        record.set(llm_calls=account.calls, llm_tokens=account.total_tokens)
    return result
