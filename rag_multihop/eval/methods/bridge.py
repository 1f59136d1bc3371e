"""The ``bridge``, ``bridge-embed`` and ``bridge-aar`` benchmark methods.

- ``bridge``: BridgeRAG as configured by the options. Without ``llm`` it is the LLM-free
  mode: template queries, heuristic entities and the embedding judge, whatever other
  methods run beside it. With ``--option llm=MODEL`` it is the LLM mode:
  LLM entities, SVO queries and the tripartite LLM judge.
- ``bridge-embed``: LLM-free with the :class:`~rag_multihop.bridge.judges.EmbeddingJudge`.
- ``bridge-aar``: LLM-free with the :class:`~rag_multihop.bridge.judges.AssociationJudge`;
  the AAR model is trained (or reused) exactly as the ``aar`` method does, under the same
  options (``protocol``, ``pairs``, ...). With ``protocol=transductive`` (AAR's default)
  the model has seen the gold pairs of the evaluated questions: use ``protocol=heldout`` or
  ``pairs=corpus`` for a fair number; the leakage is reported.

Options (``--option KEY=VALUE``): the fields of
:class:`~rag_multihop.bridge.settings.BridgeSettings` under ``bridge_`` (``bridge_alpha`` α
0.1, ``bridge_position`` ``first``/``judged``, ``bridge_entity_k``, ``bridge_query_k``,
``bridge_pool_cap`` and, for the LLM-free mode, ``bridge_entities`` (entities searched,
:data:`~rag_multihop.bridge.queries.LLM_FREE_ENTITIES`), ``bridge_templates``
(comma-separated names of :data:`~rag_multihop.bridge.queries.QUERY_TEMPLATES`) and
``bridge_judge_weights`` (``q,b,bm,qm``: the four
:class:`~rag_multihop.bridge.judges.JudgeWeights`)); and the LLM (:class:`LLMOptions`):
``llm`` (a litellm model string), ``llm_api_base``, ``llm_api_key_env`` (the NAME of the
key's variable), ``llm_concurrency`` (default 8), ``llm_cache`` (a SQLite path, or
``default`` for ``~/.cache/rag_multihop/llm``; off by default so costs are real). Bench
only: ``prepare_bridge`` (0 or 1, default 0: 1 precomputes the vectors of the corpus's
query-independent expansion texts with the run's disk-cached encoder, see
:meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.prepare`; same rankings, faster queries).

``bench_extras()`` reports the settings, the pool (mean size, coverage = share of gold
passages in bridge + pool, the same share for a dense top list of the same size, how often
the bridge is gold, entities found), the share of questions that kept the first stage (no
name connected a pool candidate to hop 1), the per-question-type table (R@2/R@5 of the method and
of its own hop-1 dense ranking, pool coverage; datasets without types report one
``untyped`` group), the same table by number of gold passages (in 2WikiMultiHopQA the
4-passage questions are its bridge-comparison, parallel-chain ones) and, in LLM mode,
calls, tokens, cost, fallbacks and latency per query.

Example:
    >>> BRIDGE_OPTIONS.read({"bridge_alpha": "0.15"}).alpha
    0.15
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rag_multihop.bridge.judges import (
    AssociationJudge,
    EmbeddingJudge,
    Judge,
    JudgeWeights,
    LLMJudge,
    judge_name,
    name_links,
)
from rag_multihop.bridge.pipeline import BridgeRetriever, BridgeTrace
from rag_multihop.bridge.queries import LLMQueryWriter, QueryWriter, TemplateQueryWriter
from rag_multihop.bridge.settings import BridgeSettings
from rag_multihop.encoders.cache import MemoEncoder
from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.groups import grouped_percentages, percent
from rag_multihop.eval.methods.association import AAR_OPTIONS
from rag_multihop.eval.methods.association import build as build_aar
from rag_multihop.eval.metrics import recall_at_k
from rag_multihop.eval.options import OPTION
from rag_multihop.eval.registry import declare_options, declare_settings, register_method
from rag_multihop.eval.report import llm_usage, summarize
from rag_multihop.eval.splits import FoldRouter
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.llm.client import LLMClient, LLMSettings

logger = logging.getLogger(__name__)

declare_options("bridge", "prepare_bridge")

MEMO_TEXTS = 500_000
"""Texts whose vectors the bench's bridge searcher keeps (a prepared corpus holds ~60,000)."""

"""The question-type group of datasets that give no types (2Wiki's HippoRAG copy)."""


@dataclass(frozen=True)
class LLMOptions:
    """The benchmark's LLM: a litellm model string and how to reach it (``None``: the
    LLM-free mode). The values are checked by :class:`~rag_multihop.llm.client.LLMSettings`,
    built here as soon as a model is named."""

    model: str | None = field(default=None, metadata={OPTION: "llm"})
    api_base: str | None = None
    api_key_env: str | None = None
    concurrency: int = 8
    cache: str | None = None
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.model is not None:
            self.settings()

    def settings(self) -> LLMSettings:
        """The :class:`~rag_multihop.llm.client.LLMSettings` of these options."""
        from rag_multihop.llm import LLMSettings

        if self.model is None:
            raise ValueError("no LLM configured; pass --option llm=MODEL (e.g. openai/gpt-4o-mini)")
        return LLMSettings(
            self.model,
            api_base=self.api_base,
            api_key_env=self.api_key_env,
            max_concurrency=self.concurrency,
            timeout=self.timeout,
        )

    def client(self) -> LLMClient:
        """The LLM client (the key is read from the environment at call time)."""
        from rag_multihop.llm import LLMCache, LLMClient, default_cache_path

        cache = None
        if self.cache is not None:
            cache = LLMCache(default_cache_path() if self.cache == "default" else self.cache)
        return LLMClient(self.settings(), cache=cache)


BRIDGE_OPTIONS = declare_settings("bridge", BridgeSettings, prefix="bridge_")
LLM_OPTIONS = declare_settings("bridge", LLMOptions, prefix="llm_")


class FoldedJudge:
    """A :class:`Judge` that asks the judge of each query's fold (AAR's held-out folds)."""

    def __init__(self, judges: FoldRouter[Judge]) -> None:
        self.judges = judges

    @property
    def name(self) -> str:
        """The name of the routed judges (``"association"``)."""
        first = next(iter(self.judges.values()), None)
        return judge_name(first) if first is not None else "none"

    @property
    def weights(self) -> JudgeWeights | None:
        """The routed judges' weights (they share one setting)."""
        first = next(iter(self.judges.values()), None)
        return getattr(first, "weights", None)

    def score(
        self, query: Query, bridge: Passage, entities: Sequence[str], candidates: Sequence[Passage]
    ) -> Any:
        return self.judges.route(query).score(query, bridge, entities, candidates)

    async def ascore(
        self, query: Query, bridge: Passage, entities: Sequence[str], candidates: Sequence[Passage]
    ) -> Any:
        return await self.judges.route(query).ascore(query, bridge, entities, candidates)

    def links(self, query: Query, bridge: Passage, candidates: Sequence[Passage]) -> Any:
        """The routed judge's name links (the kept first stage's test)."""
        return name_links(query, bridge, candidates)


def _vectors(context: BenchContext) -> PassageVectors:
    return PassageVectors(
        context.raw_encoder, ids=context.dataset.corpus.ids, vectors=context.passage_vectors
    )


def _aar_judge(context: BenchContext, weights: JudgeWeights) -> tuple[Judge, list[dict[str, Any]]]:
    """Association judges from the AAR benchmark's models (trained once per run)."""
    aar = build_aar(context, "mixed")
    if aar.settings.uses_evaluated_gold:
        logger.warning(
            "the bridge association judge uses an AAR model trained on the %s pairs of the "
            "evaluated questions (protocol=transductive): its numbers include that leakage; "
            "pass --option protocol=heldout for a fair run",
            aar.settings.pairs,
        )
    untrained = [m.report["pair_stats"] for m in aar.models if m.reranker is None]
    if untrained:
        raise ValueError(
            f"bridge-aar needs an AAR model, but there were no {aar.settings.pairs} pairs to "
            "train one on (a corpus whose texts name no passage title?); use bridge instead"
        )
    vectors = _vectors(context)
    judges: FoldRouter[Judge] = FoldRouter(
        (
            model.eval_question_ids,
            AssociationJudge(model.reranker, weights=weights, vectors=vectors),
        )
        for model in aar.models
        if model.reranker is not None
    )
    report = [
        {"settings": {"protocol": aar.settings.protocol, "pairs": aar.settings.pairs}, **m.report}
        for m in aar.models
    ]
    return FoldedJudge(judges), report


class BridgeBenchRetriever:
    """Runs a :class:`BridgeRetriever` per question and keeps its traces for the report."""

    def __init__(
        self,
        pipeline: BridgeRetriever,
        questions: Sequence[QAExample],
        *,
        mode: str,
        llm: LLMOptions,
        aar: list[dict[str, Any]] | None = None,
        uses_evaluated_gold: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.uses_evaluated_gold = uses_evaluated_gold
        self.mode = mode
        self.llm = llm
        self.aar = aar
        self._questions = {q.id: q for q in questions}
        self.traces: list[BridgeTrace] = []
        self.rankings: list[list[str]] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        result = self.pipeline.run(query, k)
        self.traces.append(result.trace)
        self.rankings.append([c.id for c in result.candidates])
        return result.candidates

    def _groups(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Per question type and per number of gold passages: recall, coverage, bridge."""
        rows = []
        for trace, ranking in zip(self.traces, self.rankings, strict=True):
            question = self._questions.get(trace.query_id)
            if question is None:
                continue
            gold, ids = question.gold, set(question.gold_ids)
            reach = {*trace.pool_ids, *([trace.bridge_id] if trace.bridge_id else [])}
            row = {
                "R@2": recall_at_k(ranking, gold, 2),
                "R@5": recall_at_k(ranking, gold, 5),
                "dense_R@2": recall_at_k(list(trace.hop1_ids), gold, 2),
                "dense_R@5": recall_at_k(list(trace.hop1_ids), gold, 5),
                "pool_coverage": recall_at_k(sorted(reach), gold, max(len(reach), 1)),
                "dense_coverage_same_size": recall_at_k(list(trace.hop1_ids), gold, len(reach)),
                "bridge_is_gold": float(trace.bridge_id in ids),
            }
            rows.append((question, row))
        return grouped_percentages(rows)

    def bench_extras(self) -> dict[str, Any]:
        """Settings, pool statistics, per-type recall and, in LLM mode, the LLM accounts."""
        pipeline = self.pipeline
        writer = pipeline.writer
        extras: dict[str, Any] = {
            "mode": self.mode,
            "judge": self.traces[0].judge if self.traces else None,
            "writer": type(writer).__name__,
            "settings": {
                "alpha": pipeline.settings.alpha,
                "entity_k": pipeline.settings.entity_k,
                "query_k": pipeline.settings.query_k,
                "pool_cap": pipeline.settings.pool_cap,
                "bridge_position": pipeline.settings.bridge_position,
            },
            "pool": {
                "size": summarize([len(t.pool_ids) for t in self.traces]),
                "entities": summarize([len(t.entities) for t in self.traces]),
                "no_entities_share": percent([float(not t.entities) for t in self.traces]),
                "queries": summarize([len(t.queries) for t in self.traces]),
            },
            "kept_first_stage_share": percent([float(t.kept_first_stage) for t in self.traces]),
        }
        extras["by_type"], extras["by_gold_count"] = self._groups()
        if not any(
            self._questions[t.query_id].type for t in self.traces if t.query_id in self._questions
        ):
            extras["by_type_note"] = "the dataset gives no question types"
        if isinstance(writer, TemplateQueryWriter):
            extras["settings"] |= {
                "entities": writer.n_entities,
                "templates": list(writer.templates),
            }
        weights = getattr(pipeline.judge, "weights", None)
        if isinstance(weights, JudgeWeights):
            extras["settings"]["judge_weights"] = asdict(weights)
        if self.aar is not None:
            extras["aar_models"] = self.aar
        if self.mode == "llm":
            extras["llm"] = self._llm_report()
        return extras

    def _llm_report(self) -> dict[str, Any]:
        return llm_usage(
            self.llm.model,
            [t.account for t in self.traces if t.account is not None],
            latencies=[t.seconds for t in self.traces],
            fallbacks=[t.fallbacks for t in self.traces],
        )


def _flag(value: object, name: str) -> bool:
    """A 0/1 bench option."""
    if str(value) not in ("0", "1"):
        raise ValueError(f"option {name} must be 0 or 1, got {value!r}")
    return str(value) == "1"


def _prepare(context: BenchContext, pipeline: BridgeRetriever) -> None:
    """Precompute the corpus's expansion texts with the run's (disk-cached) encoder."""
    texts = pipeline.preparation_texts(context.dataset.corpus)
    if texts:
        pipeline.prepare(context.dataset.corpus, context.encoder.encode(texts))


def build_bridge(context: BenchContext, judge: str) -> BridgeBenchRetriever:
    """The bench retriever with ``judge`` in ``auto``, ``embedding`` or ``association``."""
    settings = BRIDGE_OPTIONS.read(context.options)
    llm = LLM_OPTIONS.read(context.options)
    # query-time texts are remembered in memory (repeated entities, sentences, prepare())
    searcher = context.dense.with_encoder(MemoEncoder(context.raw_encoder, MEMO_TEXTS))
    aar_report = None
    gold = False
    writer: QueryWriter
    chosen: Judge
    if judge == "auto" and llm.model is not None:
        client = llm.client()
        mode, writer, chosen = "llm", LLMQueryWriter(client), LLMJudge(client)
    else:
        mode, writer = "llm-free", settings.template_writer()
        if judge == "association":
            chosen, aar_report = _aar_judge(context, settings.judge_weights)
            gold = AAR_OPTIONS.read(context.options).uses_evaluated_gold
        else:
            chosen = EmbeddingJudge(_vectors(context), weights=settings.judge_weights)
    pipeline = BridgeRetriever(searcher, judge=chosen, writer=writer, settings=settings)
    if _flag(context.options.get("prepare_bridge", "0"), "prepare_bridge"):
        _prepare(context, pipeline)
    return BridgeBenchRetriever(
        pipeline,
        context.dataset.questions,
        mode=mode,
        llm=llm,
        aar=aar_report,
        uses_evaluated_gold=gold,
    )


@register_method(
    "bridge",
    "BridgeRAG: bridge = dense top-1, entity + query expansion, judge, PIT fusion "
    "(LLM-free unless --option llm=MODEL)",
)
def build_bridge_auto(context: BenchContext) -> BridgeBenchRetriever:
    return build_bridge(context, "auto")


@register_method("bridge-embed", "BridgeRAG LLM-free, embedding + title-mention judge")
def build_bridge_embed(context: BenchContext) -> BridgeBenchRetriever:
    return build_bridge(context, "embedding")


@register_method(
    "bridge-aar", "BridgeRAG LLM-free, association (AAR) judge; AAR trained as `aar` does"
)
def build_bridge_aar(context: BenchContext) -> BridgeBenchRetriever:
    return build_bridge(context, "association")
