"""BridgeRAG as a core ``Retriever``: bridge, expansion pool, judge, PIT fusion.

For a question q (:meth:`BridgeRetriever.run`):

1. **Hop 1**: search q; the top-1 passage is the bridge b.
2. **Plan**: a :class:`~rag_multihop.bridge.queries.QueryWriter` names bridge entities and
   writes queries for the missing hop (LLM: 2 entities + 3 SVO queries, concurrently;
   LLM-free: heuristic entities + template queries).
3. **Pool**: every entity and query is searched (one batch); the union, without b, is
   capped at ``pool_cap`` (:func:`~rag_multihop.bridge.pool.build_pool`).
4. **Judge**: a :class:`~rag_multihop.bridge.judges.Judge` scores each pool candidate given
   (q, b, entities), in [0, 1] (the LLM judge runs the candidates concurrently).
5. **Fuse**: judge and retrieval scores are PIT-calibrated within the pool and combined
   ``(1 − α)·PIT(judge) + α·PIT(retrieval)`` (:func:`fuse_pool`, α = 0.1).
6. **Output** (:func:`assemble`): with ``bridge_position="first"`` (the default) b is
   rank 1 and the fused pool follows; with ``"judged"`` b joins the pool and is judged like
   any candidate. Hop-1 results outside the pool fill up to ``k`` (score 0.0, signal
   ``"backfill"``).
7. **Kept first stage**: an LLM-free judge reads names; when neither the bridge nor the
   question names any pool candidate (by its title or a subject read from its text, as on a
   corpus titled by file names), the judge is not called and the output is hop 1's order
   and scores, signal ``"first_stage"`` (``BridgeSettings.keep_first_stage``; an LLM judge
   is never gated).

Scores: fused pool scores lie in (0, 1]; the bridge placed first scores :data:`BRIDGE_SCORE`
(2.0, above every fused score); backfilled passages score 0.0. Each call also returns a
:class:`BridgeTrace`: bridge, entities, queries, pool ids, the judge's name, the LLM
:class:`~rag_multihop.llm.accounting.LLMAccount` of the query (``None`` when LLM-free),
fallbacks and wall time.

Bad input and degenerate cases: a non-positive ``k`` raises ``ValueError``; no hop-1 result
gives an empty list; a plan with no entities and no queries, or searches that find only b,
give an empty pool: the judge is not called and the output is the hop-1 ranking with b
first. Judge scores outside [0, 1] raise ``ValueError``. LLM errors (missing key, unknown
model, timeouts or rate limits beyond the retry budget) propagate as the client's typed
errors; an unusable reply uses the stage's neutral fallback (see the judges and writers).

Example (LLM-free; a toy encoder stands in for MiniLM):
    >>> import numpy as np
    >>> from rag_multihop import Corpus, Passage, Query
    >>> from rag_multihop.index.dense import DenseRetriever
    >>> class Words:
    ...     name, dim = "words", 4
    ...     def encode(self, texts, *, show_progress=False):
    ...         keys = ("film", "director", "born", "city")
    ...         v = np.array([[t.lower().count(w) + 0.01 for w in keys] for t in texts], "float32")
    ...         return v / np.linalg.norm(v, axis=1, keepdims=True)
    >>> corpus = Corpus([
    ...     Passage("f", "Polish Wedding is a film by director Theresa Connelly.", title="PW"),
    ...     Passage("d", "Theresa Connelly is a director born in a city.", title="TC"),
    ...     Passage("x", "A city is big.", title="City")])
    >>> bridge = BridgeRetriever.llm_free(DenseRetriever.from_corpus(corpus, Words()))
    >>> result = bridge.run(Query("Where was the director of the film Polish Wedding born?"), k=3)
    >>> [c.id for c in result.candidates], result.trace.bridge_id, result.trace.entities
    (['f', 'd', 'x'], 'f', ('theresa connelly',))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop._settings import resolve_settings
from rag_multihop.bridge.judges import (
    EmbeddingJudge,
    Judge,
    Judgement,
    JudgeWeights,
    LLMJudge,
    check_judgement,
    judge_name,
)
from rag_multihop.bridge.pool import build_pool
from rag_multihop.bridge.queries import (
    HopPlan,
    LLMQueryWriter,
    QueryWriter,
    make_client,
)
from rag_multihop.bridge.search import Searcher, as_searcher
from rag_multihop.bridge.settings import BridgeSettings
from rag_multihop.encoders.base import Encoder
from rag_multihop.fusion.core import FusionSettings, fuse_candidates
from rag_multihop.protocols import Retriever
from rag_multihop.tracing import NoSpan, Span, span
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int, loggable
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.chat import ChatModel
    from rag_multihop.llm.client import LLMClient, LLMSettings

logger = logging.getLogger(__name__)

BRIDGE_SCORE = 2.0
"""Score of the bridge when it is placed first (above every fused score in (0, 1])."""


@dataclass(frozen=True)
class BridgeTrace:
    """What one query did; ``account`` is ``None`` when no LLM was used."""

    query_id: str
    bridge_id: str | None
    hop1_ids: tuple[str, ...]
    entities: tuple[str, ...]
    queries: tuple[str, ...]
    pool_ids: tuple[str, ...]
    judge: str
    account: LLMAccount | None
    fallbacks: int
    seconds: float
    kept_first_stage: bool = False
    """No name connected a pool candidate to hop 1, so hop 1's order was returned."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the account as its ``to_dict()``)."""
        return {
            "query_id": self.query_id,
            "bridge_id": self.bridge_id,
            "entities": list(self.entities),
            "queries": list(self.queries),
            "pool_ids": list(self.pool_ids),
            "judge": self.judge,
            "account": None if self.account is None else self.account.to_dict(),
            "fallbacks": self.fallbacks,
            "seconds": round(self.seconds, 4),
            "kept_first_stage": self.kept_first_stage,
        }


@dataclass(frozen=True)
class BridgeResult:
    """The ranked candidates of one query and its :class:`BridgeTrace`."""

    candidates: list[Candidate]
    trace: BridgeTrace


def fuse_pool(pool: Sequence[Candidate], judgement: Judgement, alpha: float) -> list[Candidate]:
    """``(1 − α)·PIT(judge) + α·PIT(retrieval)`` over the pool, best first (ties: pool order).

    Candidates gain the signals ``"judge"``, ``"judge_cal"``, ``"retrieval_cal"`` and
    ``"fused"``; their ``"retrieval"`` signal (see :mod:`~rag_multihop.bridge.pool`) is the
    retrieval score.

    >>> from rag_multihop import Passage
    >>> pool = [Candidate(Passage(i, i), s, signals={"retrieval": s}) for i, s in
    ...         [("a", 0.9), ("b", 0.8), ("c", 0.7)]]
    >>> fused = fuse_pool(pool, Judgement(np.array([0.1, 0.9, 0.5])), alpha=0.1)
    >>> [(c.id, round(c.score, 3)) for c in fused]
    [('b', 0.967), ('c', 0.633), ('a', 0.4)]
    """
    if not pool:
        return []
    settings = FusionSettings(calibration="pit", fusion="linear", weights=(1.0 - alpha, alpha))
    lists = {
        "judge": [c.with_score(float(j)) for c, j in zip(pool, judgement.scores, strict=True)],
        "retrieval": [c.with_score(float(c.signals.get("retrieval", c.score))) for c in pool],
    }
    return [c.with_score(c.score, fused=c.score) for c in fuse_candidates(lists, settings)]


def assemble(
    bridge: Candidate | None,
    fused: Sequence[Candidate],
    hop1: Sequence[Candidate],
    k: int,
) -> list[Candidate]:
    """The output: ``bridge`` first when given, then ``fused``, then hop-1 backfill; top ``k``.

    Pass ``bridge=None`` when the bridge was fused with the pool (``"judged"``).
    """
    out: list[Candidate] = []
    if bridge is not None:
        out.append(bridge.with_score(BRIDGE_SCORE, bridge=1.0))
    out.extend(fused)
    seen = {c.id for c in out}
    out.extend(c.with_score(0.0, backfill=1.0) for c in hop1 if c.id not in seen)
    return [
        Candidate(c.passage, c.score, rank, c.signals) for rank, c in enumerate(out[:k], start=1)
    ]


def keeps_first_stage(
    judge: object,
    settings: BridgeSettings,
    query: Query,
    bridge: Passage,
    others: Sequence[Passage],
) -> bool:
    """Whether to keep the first stage's order: ``settings.keep_first_stage`` is on, the
    judge reads names (it has ``links``, as the LLM-free judges do) and no candidate in
    ``others`` is named by the bridge or the question: the judge could only reshuffle them
    by similarity, which is what the first stage already did."""
    links = getattr(judge, "links", None)
    if not settings.keep_first_stage or links is None or not others:
        return False
    return not bool(np.any(links(query, bridge, others)))


def first_stage(hop1: Sequence[Candidate], k: int) -> list[Candidate]:
    """The top ``k`` of ``hop1`` in its own order and scores, marked ``first_stage``."""
    return [
        Candidate(c.passage, c.score, rank, {**c.signals, "first_stage": 1.0})
        for rank, c in enumerate(hop1[:k], start=1)
    ]


class BridgeRetriever:
    """BridgeRAG: bridge-conditioned expansion and judging (see the module docstring).

    Args:
        base: a :class:`~rag_multihop.bridge.search.Searcher` or any core ``Retriever``
            (a ``DenseRetriever`` is searched in batches).
        writer: makes the hop-2 plan (default: the LLM-free
            :class:`~rag_multihop.bridge.queries.TemplateQueryWriter` of ``settings``).
        judge: scores pool candidates (see :mod:`rag_multihop.bridge.judges`).
        settings: :class:`~rag_multihop.bridge.settings.BridgeSettings`.
        alpha, entity_k, query_k, pool_cap, bridge_position, entities, templates,
            judge_weights, keep_first_stage: override the same-named field of ``settings``
            (``None`` keeps it).

    Use :meth:`llm_free` or :meth:`with_llm` to build one from a dense retriever.
    """

    def __init__(
        self,
        base: Searcher | Retriever,
        *,
        judge: Judge,
        writer: QueryWriter | None = None,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        entity_k: int | None = None,
        query_k: int | None = None,
        pool_cap: int | None = None,
        bridge_position: str | None = None,
        entities: int | None = None,
        templates: Sequence[str] | None = None,
        judge_weights: JudgeWeights | None = None,
        keep_first_stage: bool | None = None,
    ) -> None:
        if not isinstance(judge, Judge):
            raise TypeError(f"judge must implement score and ascore, got {type(judge).__name__}")
        self.searcher = as_searcher(base)
        self.settings = resolve_settings(
            BridgeSettings,
            settings,
            alpha=alpha,
            entity_k=entity_k,
            query_k=query_k,
            pool_cap=pool_cap,
            bridge_position=bridge_position,
            entities=entities,
            templates=templates,
            judge_weights=judge_weights,
            keep_first_stage=keep_first_stage,
        )
        self.writer: QueryWriter = writer if writer is not None else self.settings.template_writer()
        if not isinstance(self.writer, QueryWriter):
            raise TypeError(
                f"writer must implement plan and aplan, got {type(self.writer).__name__}"
            )
        self.judge = judge

    @classmethod
    def llm_free(
        cls,
        base: Searcher | Retriever,
        *,
        encoder: Encoder | None = None,
        vectors: PassageVectors | None = None,
        settings: BridgeSettings | None = None,
        writer: QueryWriter | None = None,
        alpha: float | None = None,
        entity_k: int | None = None,
        query_k: int | None = None,
        pool_cap: int | None = None,
        bridge_position: str | None = None,
        entities: int | None = None,
        templates: Sequence[str] | None = None,
        judge_weights: JudgeWeights | None = None,
        keep_first_stage: bool | None = None,
    ) -> BridgeRetriever:
        """Template queries and the :class:`EmbeddingJudge`; no LLM, no key.

        The judge's vectors come from ``vectors``, else ``encoder``, else the encoder of a
        ``DenseRetriever`` given as ``base``; the overrides are the constructor's.
        """
        if vectors is None:
            encoder = encoder if encoder is not None else getattr(base, "encoder", None)
            if encoder is None:
                raise ValueError(
                    "the LLM-free judge needs passage vectors: pass encoder= or vectors="
                )
            vectors = PassageVectors(encoder)
        settings = resolve_settings(
            BridgeSettings,
            settings,
            alpha=alpha,
            entity_k=entity_k,
            query_k=query_k,
            pool_cap=pool_cap,
            bridge_position=bridge_position,
            entities=entities,
            templates=templates,
            judge_weights=judge_weights,
            keep_first_stage=keep_first_stage,
        )
        judge = EmbeddingJudge(vectors, weights=settings.judge_weights)
        return cls(base, judge=judge, writer=writer, settings=settings)

    @classmethod
    def with_llm(
        cls,
        base: Searcher | Retriever,
        llm: str | LLMSettings | LLMClient | ChatModel,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        entity_k: int | None = None,
        query_k: int | None = None,
        pool_cap: int | None = None,
        bridge_position: str | None = None,
        entities: int | None = None,
        templates: Sequence[str] | None = None,
        judge_weights: JudgeWeights | None = None,
        keep_first_stage: bool | None = None,
    ) -> BridgeRetriever:
        """BridgeRAG with an LLM for entities, SVO queries and the judge.

        ``llm`` is a litellm model string (``"openai/gpt-4o-mini"``; ``api_base`` and
        ``api_key_env``, the NAME of the key's variable, apply to it), an
        :class:`~rag_multihop.llm.client.LLMSettings`, a ready client or a
        :class:`~rag_multihop.llm.chat.ChatModel` (a framework's LLM object, wrapped; the
        adapters wrap LlamaIndex and Haystack objects themselves). The key is read
        from the environment at the first call; a missing one raises
        :class:`~rag_multihop.llm.errors.LLMConfigError` naming the variable. The overrides
        are the constructor's.
        """
        client = make_client(llm, api_base=api_base, api_key_env=api_key_env)
        settings = resolve_settings(
            BridgeSettings,
            settings,
            alpha=alpha,
            entity_k=entity_k,
            query_k=query_k,
            pool_cap=pool_cap,
            bridge_position=bridge_position,
            entities=entities,
            templates=templates,
            judge_weights=judge_weights,
            keep_first_stage=keep_first_stage,
        )
        return cls(base, judge=LLMJudge(client), writer=LLMQueryWriter(client), settings=settings)

    # ------------------------------------------------------------------ steps

    def prepare(self, passages: Iterable[Passage], vectors: np.ndarray | None = None) -> int:
        """Precompute the vectors of every query-independent text a plan may search (the
        writer's ``passage_texts``: LLM-free entity names and bridge sentences) for
        ``passages``, so that a query encodes only the texts made from the question.

        The searcher's encoder must be a :class:`~rag_multihop.encoders.cache.MemoEncoder`
        large enough to hold them (e.g. ``dense.with_encoder(MemoEncoder(encoder))``);
        ``vectors`` may give them (one row per text of :meth:`preparation_texts`, e.g. from a
        disk-cached encoder), else it encodes them. Returns how many texts were new; 0 when
        the writer has no such texts (the LLM writer)."""
        from rag_multihop.encoders.cache import MemoEncoder

        texts = self.preparation_texts(passages)
        if not texts:
            return 0
        memo = getattr(self.searcher, "encoder", None)
        if not isinstance(memo, MemoEncoder):
            raise ValueError(
                "prepare() keeps vectors in the searcher's MemoEncoder; build the searcher "
                f"with one (got encoder {type(memo).__name__})"
            )
        new = memo.remember(texts, vectors)
        logger.info("bridge: %d expansion texts precomputed", new)
        return new

    def preparation_texts(self, passages: Iterable[Passage]) -> list[str]:
        """The texts :meth:`prepare` precomputes for ``passages`` (none for writers without
        ``passage_texts``, such as the LLM writer)."""
        texts_of = getattr(self.writer, "passage_texts", None)
        if texts_of is None:
            return []
        return list(dict.fromkeys(t for p in passages for t in texts_of(p)))

    def _expansion(self, query: Query, plan: HopPlan) -> list[Query]:
        """One search per query and entity; a query text equal to the question keeps the
        question's embedding."""
        return [
            Query(text, embedding=query.embedding if text == query.text else None)
            for text in (*plan.queries, *plan.entities)
        ]

    def _pool(
        self, bridge: Candidate, plan: HopPlan, hits: Sequence[Sequence[Candidate]]
    ) -> list[Candidate]:
        s = self.settings
        n = len(plan.queries)
        pool = build_pool(
            bridge.id,
            [h[: s.query_k] for h in hits[:n]],
            [h[: s.entity_k] for h in hits[n:]],
            cap=s.pool_cap,
        )
        if s.bridge_position == "judged":
            signals = {**bridge.signals, "retrieval": bridge.score, "bridge": 1.0}
            pool = [Candidate(bridge.passage, bridge.score, 0, signals), *pool]
        return pool

    def _keeps_first_stage(self, query: Query, bridge: Candidate, pool: list[Candidate]) -> bool:
        others = [c.passage for c in pool if c.id != bridge.id]
        return keeps_first_stage(self.judge, self.settings, query, bridge.passage, others)

    def _finish(
        self,
        query: Query,
        k: int,
        hop1: list[Candidate],
        plan: HopPlan,
        pool: list[Candidate],
        raw_judgement: Judgement | Sequence[float] | np.ndarray | None,
        start: float,
        kept: bool = False,
    ) -> BridgeResult:
        if raw_judgement is None:
            judgement = Judgement(np.zeros(0))
            fused: list[Candidate] = []
        else:
            judgement = check_judgement(raw_judgement, len(pool), self.judge)
            with span("bridge.fuse", pool_size=len(pool), alpha=self.settings.alpha):
                fused = fuse_pool(pool, judgement, self.settings.alpha)
        first = hop1[0] if self.settings.bridge_position == "first" else None
        candidates = first_stage(hop1, k) if kept else assemble(first, fused, hop1, k)
        accounts = [a for a in (plan.account, judgement.account) if a is not None]
        trace = BridgeTrace(
            query_id=query.id,
            bridge_id=hop1[0].id,
            hop1_ids=tuple(c.id for c in hop1),
            entities=plan.entities,
            queries=plan.queries,
            pool_ids=tuple(c.id for c in pool if c.id != hop1[0].id),
            judge=judge_name(self.judge),
            account=sum(accounts[1:], start=accounts[0]) if accounts else None,
            fallbacks=plan.fallbacks + judgement.fallbacks,
            seconds=time.perf_counter() - start,
            kept_first_stage=kept,
        )
        return BridgeResult(candidates, trace)

    def _empty(self, query: Query, start: float) -> BridgeResult:
        logger.warning("hop 1 found nothing for %s; returning no candidates", loggable(query.text))
        trace = BridgeTrace(
            query_id=query.id,
            bridge_id=None,
            hop1_ids=(),
            entities=(),
            queries=(),
            pool_ids=(),
            judge=judge_name(self.judge),
            account=None,
            fallbacks=0,
            seconds=time.perf_counter() - start,
        )
        return BridgeResult([], trace)

    # ------------------------------------------------------------------ public

    def run(self, query: Query, k: int = 10) -> BridgeResult:
        """The ``k`` best candidates for ``query`` and the :class:`BridgeTrace`."""
        start = time.perf_counter()
        k = check_positive_int(k, "k")
        with span("bridge.run", k=k, judge=judge_name(self.judge)) as record:
            with span("bridge.hop1", k=k) as stage:
                hop1 = self.searcher.search([query], k)[0]
                stage.set(candidates=len(hop1))
            if not hop1:
                return self._empty(query, start)
            bridge = hop1[0]
            with span("bridge.plan") as stage:
                plan = self.writer.plan(query, bridge.passage)
                _planned(stage, plan)
            expansion = self._expansion(query, plan)
            depth = max(self.settings.query_k, self.settings.entity_k)
            with span("bridge.expansion", searches=len(expansion), k=depth) as stage:
                hits = self.searcher.search(expansion, depth) if expansion else []
                pool = self._pool(bridge, plan, hits)
                stage.set(candidates=sum(len(h) for h in hits), pool_size=len(pool))
            kept = self._keeps_first_stage(query, bridge, pool)
            with span("bridge.judge", candidates=0 if kept else len(pool), kept_first_stage=kept):
                judged = (
                    self.judge.score(
                        query, bridge.passage, plan.entities, [c.passage for c in pool]
                    )
                    if pool and not kept
                    else None
                )
            result = self._finish(query, k, hop1, plan, pool, judged, start, kept)
            return _traced(record, result)

    async def arun(self, query: Query, k: int = 10) -> BridgeResult:
        """The async twin of :meth:`run` (LLM calls concurrent, searches off the loop)."""
        start = time.perf_counter()
        k = check_positive_int(k, "k")
        with span("bridge.run", k=k, judge=judge_name(self.judge)) as record:
            with span("bridge.hop1", k=k) as stage:
                hop1 = (await self.searcher.asearch([query], k))[0]
                stage.set(candidates=len(hop1))
            if not hop1:
                return self._empty(query, start)
            bridge = hop1[0]
            with span("bridge.plan") as stage:
                plan = await self.writer.aplan(query, bridge.passage)
                _planned(stage, plan)
            expansion = self._expansion(query, plan)
            depth = max(self.settings.query_k, self.settings.entity_k)
            with span("bridge.expansion", searches=len(expansion), k=depth) as stage:
                hits = await self.searcher.asearch(expansion, depth) if expansion else []
                pool = self._pool(bridge, plan, hits)
                stage.set(candidates=sum(len(h) for h in hits), pool_size=len(pool))
            kept = self._keeps_first_stage(query, bridge, pool)
            with span("bridge.judge", candidates=0 if kept else len(pool), kept_first_stage=kept):
                judged = (
                    await self.judge.ascore(
                        query, bridge.passage, plan.entities, [c.passage for c in pool]
                    )
                    if pool and not kept
                    else None
                )
            result = self._finish(query, k, hop1, plan, pool, judged, start, kept)
            return _traced(record, result)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The core ``Retriever`` protocol: :meth:`run` without the trace."""
        return self.run(query, k).candidates

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return (await self.arun(query, k)).candidates


def _planned(stage: Span | NoSpan, plan: HopPlan) -> None:
    """The plan's counts on its span."""
    if not stage.recording:
        return
    stage.set(entities=len(plan.entities), queries=len(plan.queries), fallbacks=plan.fallbacks)


def _traced(record: Span | NoSpan, result: BridgeResult) -> BridgeResult:
    """``result`` with its counts (pool, returned, LLM calls and tokens) on ``record``."""
    if not record.recording:
        return result
    trace = result.trace
    record.set(
        pool_size=len(trace.pool_ids), returned=len(result.candidates), fallbacks=trace.fallbacks
    )
    if trace.account is not None:
        record.set(llm_calls=trace.account.calls, llm_tokens=trace.account.total_tokens)
    return result
