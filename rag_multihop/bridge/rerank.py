"""Bridge-conditioned judging of a candidate list you already have (a core ``Reranker``).

:class:`BridgeReranker` is BridgeRAG's steps 5-6 without its own searches: the top
candidate is the bridge, the others are the pool; the judge scores them given (q, b,
entities) and the judge and incoming scores are fused with PIT (α = 0.1). Entities come
from a :class:`~rag_multihop.bridge.queries.QueryWriter` (default: the LLM-free heuristic
one; an :class:`~rag_multihop.bridge.queries.LLMQueryWriter` also spends its SVO call,
whose queries are unused here). Use it after any retriever, e.g. as a framework
postprocessor.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Candidate, Passage, Query
    >>> from rag_multihop.bridge.judges import Judgement
    >>> class Fixed:
    ...     def score(self, query, bridge, entities, candidates):
    ...         return Judgement(np.array([0.1, 0.9]))
    ...     async def ascore(self, query, bridge, entities, candidates):
    ...         return self.score(query, bridge, entities, candidates)
    >>> found = [Candidate(Passage(i, i), s) for i, s in [("b", 0.9), ("x", 0.8), ("y", 0.7)]]
    >>> [c.id for c in BridgeReranker(Fixed()).rerank(Query("q"), found)]
    ['b', 'y', 'x']
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag_multihop._settings import SettingsField, resolve_settings
from rag_multihop.bridge.judges import (
    EmbeddingJudge,
    Judge,
    Judgement,
    LLMJudge,
    check_judgement,
)
from rag_multihop.bridge.pipeline import assemble, first_stage, fuse_pool, keeps_first_stage
from rag_multihop.bridge.queries import QueryWriter, make_client
from rag_multihop.bridge.settings import BridgeSettings
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_candidates, check_positive_int, check_query
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.llm.chat import ChatModel
    from rag_multihop.llm.client import LLMClient, LLMSettings

logger = logging.getLogger(__name__)


class BridgeReranker:
    """Judge a ranked list against its own top candidate (see the module docstring).

    Args:
        judge: a :class:`~rag_multihop.bridge.judges.Judge`.
        writer: names the bridge entities (default: the LLM-free
            :class:`~rag_multihop.bridge.queries.TemplateQueryWriter` of ``settings``).
        settings: :class:`~rag_multihop.bridge.settings.BridgeSettings`; the reranker reads
            ``alpha`` (weight of the incoming scores in the PIT fusion), ``bridge_position``
            (``"first"``: the top candidate stays rank 1, or ``"judged"``),
            ``keep_first_stage`` (an LLM-free judge that finds no candidate named by the top
            one or the question returns the incoming order, signal ``"first_stage"``) and,
            for the default writer and judge, the LLM-free knobs.
        alpha, bridge_position: override the same-named field of ``settings``.
    """

    alpha = SettingsField()
    bridge_position = SettingsField()

    def __init__(
        self,
        judge: Judge,
        *,
        writer: QueryWriter | None = None,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        bridge_position: str | None = None,
    ) -> None:
        if not isinstance(judge, Judge):
            raise TypeError(f"judge must implement score and ascore, got {type(judge).__name__}")
        self.judge = judge
        self.settings = resolve_settings(
            BridgeSettings, settings, alpha=alpha, bridge_position=bridge_position
        )
        self.writer: QueryWriter = writer if writer is not None else self.settings.template_writer()

    @classmethod
    def llm_free(
        cls,
        encoder: Encoder,
        *,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        bridge_position: str | None = None,
    ) -> BridgeReranker:
        """The embedding + title-mention judge with ``encoder``'s vectors; no LLM."""
        settings = resolve_settings(
            BridgeSettings, settings, alpha=alpha, bridge_position=bridge_position
        )
        judge = EmbeddingJudge(PassageVectors(encoder), weights=settings.judge_weights)
        return cls(judge, settings=settings)

    @classmethod
    def with_llm(
        cls,
        llm: str | LLMSettings | LLMClient | ChatModel,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        bridge_position: str | None = None,
    ) -> BridgeReranker:
        """The tripartite LLM judge (heuristic entities, so one LLM call per candidate);
        ``llm`` as in :meth:`BridgeRetriever.with_llm
        <rag_multihop.bridge.pipeline.BridgeRetriever.with_llm>`."""
        client = make_client(llm, api_base=api_base, api_key_env=api_key_env)
        return cls(
            LLMJudge(client), settings=settings, alpha=alpha, bridge_position=bridge_position
        )

    def _split(self, candidates: Sequence[Candidate]) -> tuple[Candidate, list[Candidate]]:
        ordered = sorted(candidates, key=lambda c: (-c.score, c.rank or 0))
        ids = [c.id for c in ordered]
        if len(set(ids)) != len(ids):
            dupes = [pid for pid, n in Counter(ids).items() if n > 1]
            raise ValueError(f"candidates must have unique passage ids; duplicated: {dupes[:5]}")
        bridge, rest = ordered[0], ordered[1:]
        pool = [c.with_score(c.score, retrieval=c.score) for c in rest]
        if self.settings.bridge_position == "judged":
            pool.insert(0, bridge.with_score(bridge.score, retrieval=bridge.score, bridge=1.0))
        return bridge, pool

    def _keeps_first_stage(self, query: Query, bridge: Candidate, pool: list[Candidate]) -> bool:
        others = [c.passage for c in pool if c.id != bridge.id]
        return keeps_first_stage(self.judge, self.settings, query, bridge.passage, others)

    def _finish(
        self,
        bridge: Candidate,
        pool: list[Candidate],
        judged: Judgement | Sequence[float] | np.ndarray,
        top_n: int | None,
    ) -> list[Candidate]:
        judgement = check_judgement(judged, len(pool), self.judge)
        fused = fuse_pool(pool, judgement, self.settings.alpha)
        first = bridge if self.settings.bridge_position == "first" else None
        return assemble(first, fused, [], top_n or len(fused) + 1)

    def rerank(
        self, query: Query, candidates: Sequence[Candidate], top_n: int | None = None
    ) -> list[Candidate]:
        """``candidates`` judged and fused, best first; at most ``top_n``."""
        if top_n is not None:
            top_n = check_positive_int(top_n, "top_n")
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            return []
        bridge, pool = self._split(candidates)
        if not pool:
            return assemble(bridge, [], [], 1)
        if self._keeps_first_stage(query, bridge, pool):
            return first_stage(
                sorted(candidates, key=lambda c: (-c.score, c.rank or 0)), top_n or len(candidates)
            )
        plan = self.writer.plan(query, bridge.passage)
        judged = self.judge.score(query, bridge.passage, plan.entities, [c.passage for c in pool])
        return self._finish(bridge, pool, judged, top_n)

    async def arerank(
        self, query: Query, candidates: Sequence[Candidate], top_n: int | None = None
    ) -> list[Candidate]:
        """The async twin of :meth:`rerank`."""
        if top_n is not None:
            top_n = check_positive_int(top_n, "top_n")
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            return []
        bridge, pool = self._split(candidates)
        if not pool:
            return assemble(bridge, [], [], 1)
        if self._keeps_first_stage(query, bridge, pool):
            return first_stage(
                sorted(candidates, key=lambda c: (-c.score, c.rank or 0)), top_n or len(candidates)
            )
        plan = await self.writer.aplan(query, bridge.passage)
        judged = await self.judge.ascore(
            query, bridge.passage, plan.entities, [c.passage for c in pool]
        )
        return self._finish(bridge, pool, judged, top_n)
