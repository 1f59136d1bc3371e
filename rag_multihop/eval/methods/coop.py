"""The CoopRAG benchmark methods: the LLM pipeline (unrolling, UAR, RaLa, chain completion
and answer) and its LLM-free KeyExtract variant.

- ``uar``: dense search with the LLM-unrolled question; ``uar-subq``: one search per
  sub-question, PIT-fused.
- ``coop``: unroll, UAR, RaLa (the run's ``rala_*`` options, :mod:`.rala`), chain completion
  and answer, scored with EM/F1; ``coop-keyextract`` adds LLM KeyExtract rounds.
- ``keyextract-free``: RaLa over dense, then key sentences by similarity (no LLM).

The LLM is the run's ``--llm`` (:data:`~rag_multihop.eval.methods.bridge.LLM_OPTIONS`).
Options: ``coop_*``, every field of :class:`~rag_multihop.coop.settings.CoopSettings`.
``bench_extras()`` reports the settings, the unrolling's fallbacks and sizes, the KeyExtract
rounds and stops, the reader's unsupported spans, and per query and per stage the LLM calls,
tokens, cost and seconds.

Example:
    >>> COOP_OPTIONS.read({"coop_uar_mode": "sub-questions"}).uar_mode
    'sub-questions'
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from rag_multihop.coop.pipeline import CoopRetriever, CoopTrace
from rag_multihop.coop.settings import CoopSettings
from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.methods.bridge import LLM_OPTIONS
from rag_multihop.eval.methods.rala import rala_reranker
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.eval.report import llm_usage, summarize
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.types import Candidate, Query

COOP_OPTIONS = declare_settings("coop", CoopSettings, prefix="coop_")
"""``coop_*`` options: every :class:`CoopSettings` field."""


class CoopBenchRetriever:
    """Runs :class:`~rag_multihop.coop.pipeline.CoopRetriever` per question; keeps the traces
    and the answers (the harness scores ``answers`` with EM/F1)."""

    def __init__(self, pipeline: CoopRetriever, *, model: str | None, read: bool) -> None:
        self.pipeline = pipeline
        self.model = model
        self.read = read
        self.traces: list[CoopTrace] = []
        self.latencies: list[float] = []
        self._answers: dict[str, str] = {}

    @property
    def answers(self) -> dict[str, str] | None:
        """Answers by question id (scored with EM/F1), ``None`` when the method reads none."""
        return self._answers if self.read else None

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        start = time.perf_counter()
        result = self.pipeline.run(query, k, read=self.read)
        self.latencies.append(time.perf_counter() - start)
        self.traces.append(result.trace)
        if result.answer is not None:
            self._answers[str(query.id)] = result.answer
        return result.candidates

    def bench_extras(self) -> dict[str, Any]:
        pipeline, traces = self.pipeline, self.traces
        extras: dict[str, Any] = {
            "settings": asdict(pipeline.settings),
            "rala": None if pipeline.reranker is None else asdict(pipeline.reranker.settings),
            "unrolling": {
                "fallbacks": sum(t.unrolling.fallback for t in traces),
                "sub_questions": summarize([len(t.unrolling.sub_questions) for t in traces]),
                "chain_length": summarize([len(t.unrolling.chain) for t in traces]),
                "masked_entities": summarize([t.unrolling.masked for t in traces]),
                "issues": _count(issue for t in traces for issue in t.unrolling.issues),
            },
        }
        rounds = [len(t.rounds) for t in traces if t.stop is not None]
        if rounds:
            extras["keyextract"] = {
                "rounds": summarize(rounds),
                "stops": _count(t.stop for t in traces if t.stop is not None),
            }
        readings = [t.reading for t in traces if t.reading is not None]
        if readings:
            extras["reading"] = {
                "unsupported_spans": summarize([len(r.unsupported) for r in readings]),
                "answers_not_in_passages": sum(not r.answer_supported for r in readings),
                "empty_answers": sum(not r.answer for r in readings),
                "issues": _count(issue for r in readings for issue in r.issues),
            }
        if self.model is not None:
            extras["llm"] = self._llm_report()
        return extras

    def _llm_report(self) -> dict[str, Any]:
        stages: dict[str, list[Any]] = {}
        for trace in self.traces:
            for stage, account in trace.accounts.items():
                name = "keyextract" if stage.startswith("keyextract_") else stage
                stages.setdefault(name, []).append(account)
        return {
            **llm_usage(
                self.model,
                [t.account for t in self.traces if t.account is not None],
                latencies=self.latencies,
                fallbacks=[t.fallbacks for t in self.traces],
            ),
            "per_stage": {
                stage: {
                    "calls_per_query": round(sum(a.calls for a in accounts) / len(self.traces), 3),
                    "prompt_tokens_per_call": _mean_per_call(accounts, "prompt_tokens"),
                    "completion_tokens_per_call": _mean_per_call(accounts, "completion_tokens"),
                    "seconds": summarize(
                        [t.seconds[_stage_clock(stage)] for t in self.traces if stage in _seen(t)]
                    ),
                }
                for stage, accounts in stages.items()
            },
        }


def _seen(trace: CoopTrace) -> set[str]:
    return {"keyextract" if s.startswith("keyextract_") else s for s in trace.accounts}


def _stage_clock(stage: str) -> str:
    """The trace's clock of an account's stage (completion and answer share ``read``)."""
    return "read" if stage in ("complete", "answer") else stage


def _mean_per_call(accounts: Sequence[Any], name: str) -> float:
    calls = sum(a.calls for a in accounts)
    return round(sum(getattr(a, name) for a in accounts) / calls, 1) if calls else 0.0


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def _text_retriever(context: BenchContext) -> DenseRetriever:
    """Dense retrieval over the shared index that embeds new texts with the raw encoder (the
    unrolled questions would each write a cache shard otherwise)."""
    dense = context.dense
    return DenseRetriever(dense.corpus, dense.index, context.raw_encoder)


def build_coop(
    context: BenchContext,
    *,
    rala: bool,
    read: bool,
    keyextract: str | None = None,
    uar_mode: str | None = None,
    needs_llm: bool = True,
) -> CoopBenchRetriever:
    """CoopRAG with the run's options: the LLM of ``--llm`` for unrolling and reading (and
    KeyExtract when ``keyextract="llm"``), RaLa when ``rala``."""
    from rag_multihop.coop.keyextract import LLMKeyExtractor, SimilarityKeyExtractor
    from rag_multihop.coop.reader import ChainReader
    from rag_multihop.coop.unroll import LLMUnroller

    settings = COOP_OPTIONS.read(context.options)
    if uar_mode is not None:
        settings = replace(settings, uar_mode=uar_mode)
    if keyextract is not None and not settings.keyextract_rounds:
        settings = replace(settings, keyextract_rounds=2)
    llm = LLM_OPTIONS.read(context.options)
    if llm.model is None and needs_llm:
        raise ValueError(
            "this method needs an LLM: pass --llm MODEL (a litellm model string, or 'local' "
            "for the embedded model)"
        )
    client = llm.client() if llm.model is not None else None
    reranker = rala_reranker(context)[0] if rala else None
    extractor: Any = None
    if keyextract == "llm" and client is not None:
        extractor = LLMKeyExtractor(client)
    elif keyextract is not None:
        extractor = SimilarityKeyExtractor(context.raw_encoder)
    pipeline = CoopRetriever(
        _text_retriever(context),
        unroller=None if client is None else LLMUnroller(client),
        reranker=reranker,
        reader=None if client is None or not read else ChainReader(client, top_k=settings.top_k),
        key_extractor=extractor,
        settings=settings,
    )
    return CoopBenchRetriever(pipeline, model=llm.model, read=read and client is not None)


@register_method(
    "uar",
    "CoopRAG UAR: dense search with the LLM-unrolled question (needs --llm)",
    requires=["llm"],
)
def build_uar(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=False, read=False, uar_mode="concatenate")


@register_method(
    "uar-subq",
    "UAR variant: one dense search per sub-question, PIT-fused (needs --llm)",
    requires=["llm"],
)
def build_uar_subq(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=False, read=False, uar_mode="sub-questions")


@register_method(
    "coop",
    "CoopRAG: unroll, UAR, RaLa, chain completion and answer (EM/F1; needs --llm)",
    requires=["llm"],
)
def build_coop_full(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=True)


@register_method(
    "coop-keyextract",
    "CoopRAG with LLM KeyExtract rounds before reading (needs --llm)",
    requires=["llm"],
)
def build_coop_keyextract(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=True, keyextract="llm")


@register_method(
    "keyextract-free",
    "LLM-free KeyExtract: RaLa over dense, then key sentences by similarity (budget rounds)",
)
def build_keyextract_free(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=False, keyextract="similarity", needs_llm=False)
