"""The CoopRAG benchmark methods: RaLa reranking (LLM-free) and its ablations.

- ``rala``: the shared dense top-K (K = ``rala_candidates``, 100) reranked by RaLa with the
  scoring of ``rala_scoring`` (default ``maxsim``).
- ``rala-gap``: the same with Eq. 4 (``gap-weighted``); ``rala-layer-gap``: Eq. 3.
- ``rala-bridge``: the LLM-free BridgeRAG ranking's top-K reranked by RaLa.

Passage token states are computed once per dataset and layout and cached on disk
(``$RAG_MULTIHOP_CACHE/token_states``, default ``~/.cache/rag_multihop/token_states``), so
latency is the query's: its token states, the store lookups and the scoring.

Options (``--option KEY=VALUE``): ``rala_scoring``, ``rala_layer``, ``rala_buckets``,
``rala_candidate_layers`` (comma-separated), ``rala_seed``, ``rala_pooling``,
``rala_token_weighting``, ``rala_drop_punctuation``, ``rala_candidates`` (K) — the fields of
:class:`~rag_multihop.coop.settings.RaLaSettings` — and ``rala_token_states``
(``precomputed`` or ``query-time``: where passage states come from).

``bench_extras()`` reports the settings, the layers read, the store's memory (bytes per
passage, tokens per passage), the query-time encodings, per query the mean within-candidates
AUC of each signal against the gold passages (how well each signal alone separates gold from
the other candidates), and the spread of the gap weight relative to MaxSim's.

Example:
    >>> options = {"rala_scoring": "layer-gap", "rala_candidate_layers": "1,3"}
    >>> RALA_OPTIONS.read(options).rala.candidate_layers
    (1, 3)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop.coop.pipeline import CoopRetriever, CoopSettings, CoopTrace
from rag_multihop.coop.rala import RaLaReranker
from rag_multihop.coop.settings import RaLaSettings
from rag_multihop.coop.states import HiddenStateEncoder
from rag_multihop.coop.store import PassageStates
from rag_multihop.encoders.cache import CachedEncoder
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.options import FLATTEN
from rag_multihop.eval.registry import BenchContext, declare_settings, register_method
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_choice

logger = logging.getLogger(__name__)

TOKEN_SOURCES = ("precomputed", "query-time")


@dataclass(frozen=True)
class RaLaBenchSettings:
    """RaLa's settings plus where the benchmark takes passage states from."""

    rala: RaLaSettings = field(default_factory=RaLaSettings, metadata={FLATTEN: True})
    token_states: str = "precomputed"

    def __post_init__(self) -> None:
        check_choice(self.token_states, "token_states", TOKEN_SOURCES)


RALA_OPTIONS = declare_settings("coop", RaLaBenchSettings, prefix="rala_")
"""``rala_*`` options: every :class:`RaLaSettings` field and ``rala_token_states``."""
COOP_OPTIONS = declare_settings("coop", CoopSettings, prefix="coop_")
"""``coop_*`` options: every :class:`CoopSettings` field."""


def _cache_root() -> Path:
    root = os.environ.get("RAG_MULTIHOP_CACHE") or Path.home() / ".cache" / "rag_multihop"
    return Path(root) / "token_states"


def _store_key(context: BenchContext, reranker: RaLaReranker) -> str:
    digest = hashlib.sha256()
    layout = reranker.layout
    header = {
        "encoder": reranker.encoder.name,
        "max_length": reranker.encoder.max_length,
        "token_layers": layout.token_layers,
        "pooled_layers": layout.pooled_layers,
        "pooling": reranker.pooling,
        "drop_punctuation": reranker.settings.drop_punctuation,
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for passage in context.dataset.corpus:
        digest.update(passage.id.encode() + b"\0" + passage.embedding_text.encode() + b"\0")
    return digest.hexdigest()[:24]


def passage_store(context: BenchContext, reranker: RaLaReranker) -> PassageStates:
    """The corpus's states in ``reranker``'s layout: from the run, the disk cache, or built."""
    key = _store_key(context, reranker)
    artifact = f"rala-store:{key}"
    if artifact in context.artifacts:
        return context.artifacts[artifact]
    folder = _cache_root() / key
    store = None
    if (folder / "CURRENT").is_file():
        try:
            store = PassageStates.load(folder)
        except (OSError, ValueError) as exc:
            logger.warning("rebuilding the token-state cache %s: %s", folder, exc)
    if store is None or store.ids != list(context.dataset.corpus.ids):
        logger.info("computing token states of %d passages", len(context.dataset.corpus))
        store = PassageStates.build(
            list(context.dataset.corpus),
            reranker.encoder,
            reranker.layout,
            pooling=reranker.pooling,
            drop_punctuation=reranker.settings.drop_punctuation,
        )
        store.save(folder)
    context.artifacts[artifact] = store
    return store


def _hidden_state_encoder(context: BenchContext) -> HiddenStateEncoder:
    """The benchmark encoder's hidden states (one loaded model per run)."""
    encoder = context.artifacts.get("rala-encoder")
    if not isinstance(encoder, HiddenStateEncoder):
        encoder = HiddenStateEncoder(_raw_encoder(context), name=context.encoder.name)
        context.artifacts["rala-encoder"] = encoder
    return encoder


def _auc(scores: np.ndarray, gold: np.ndarray) -> float | None:
    """Probability that a gold candidate outscores a non-gold one (ties count half)."""
    if not gold.any() or gold.all():
        return None
    pos, neg = scores[gold], scores[~gold]
    return float((pos[:, None] > neg).mean() + 0.5 * (pos[:, None] == neg).mean())


class RaLaBenchRetriever:
    """A base retriever's top-K reranked by RaLa, with the diagnostics of ``bench_extras``."""

    def __init__(
        self,
        base: Retriever,
        reranker: RaLaReranker,
        questions: Sequence[QAExample],
        *,
        source: str,
        base_name: str,
    ) -> None:
        self.base = base
        self.reranker = reranker
        self.source = source
        self.base_name = base_name
        self._gold = {q.id: frozenset(q.gold_ids) for q in questions}
        self._auc: dict[str, list[float]] = {}
        self._spread: list[float] = []
        self._rerank_ms: list[float] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        found = self.base.retrieve(query, k=self.reranker.settings.candidates)
        start = time.perf_counter()
        ranked = self.reranker.rerank(query, found)
        self._rerank_ms.append((time.perf_counter() - start) * 1000.0)
        self._diagnose(query, found, ranked)
        return ranked[:k]

    def _diagnose(
        self, query: Query, found: Sequence[Candidate], ranked: Sequence[Candidate]
    ) -> None:
        gold_ids = self._gold.get(str(query.id))
        if not gold_ids or not ranked:
            return
        by_id = {c.id: c for c in ranked}
        gold = np.array([c.id in gold_ids for c in found])
        names = {"first_stage": np.array([c.score for c in found])}
        for signal in ("maxsim", "gap_weight", "rala"):
            if signal in ranked[0].signals:
                names[signal] = np.array([by_id[c.id].signals[signal] for c in found])
        for name, values in names.items():
            auc = _auc(values, gold)
            if auc is not None:
                self._auc.setdefault(name, []).append(auc)
        if "gap_weight" in names:
            maxsim, weight = names["maxsim"], names["gap_weight"]
            log_spread = np.std(np.log(np.clip(weight, 1e-6, None))) / max(
                float(np.std(np.log(np.clip(maxsim, 1e-6, None)))), 1e-9
            )
            self._spread.append(float(log_spread))

    def bench_extras(self) -> dict[str, Any]:
        store = self.reranker.store
        layout = self.reranker.layout
        extras: dict[str, Any] = {
            "settings": asdict(self.reranker.settings),
            "base": self.base_name,
            "encoder": self.reranker.encoder.name,
            "token_layers": list(layout.token_layers),
            "pooled_layers": list(layout.pooled_layers),
            "pooling": self.reranker.pooling,
            "token_states": self.source,
            "encoded_at_query_time": self.reranker.encoded_at_query_time,
            "rerank_ms": _summary(self._rerank_ms),
            "auc_vs_gold": {k: round(float(np.mean(v)), 4) for k, v in self._auc.items()},
        }
        if store is not None:
            extras["store"] = {
                "passages": len(store),
                "megabytes": round(store.nbytes / 1e6, 2),
                "bytes_per_passage": round(store.bytes_per_passage, 1),
                "tokens_per_passage": round(store.mean_tokens, 1),
                "dtype": str(store.tokens.dtype),
            }
        if self._spread:
            extras["gap_weight_log_spread_over_maxsim"] = _summary(self._spread)
        return extras


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "mean": round(float(np.mean(values)), 3),
        "median": round(float(np.median(values)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
    }


def rala_reranker(context: BenchContext, **overrides: Any) -> tuple[RaLaReranker, str]:
    """RaLa with the run's options (and ``overrides``), its store attached when precomputed;
    and where its passage states come from."""
    bench = RALA_OPTIONS.read(context.options)
    reranker = RaLaReranker(_hidden_state_encoder(context), settings=bench.rala, **overrides)
    if bench.token_states == "precomputed":
        reranker.store = passage_store(context, reranker)
        _ = reranker.layout  # checks the store against the encoder now, outside query timing
    return reranker, bench.token_states


def build_rala(
    context: BenchContext, base: Retriever, base_name: str, **overrides: Any
) -> RaLaBenchRetriever:
    """RaLa over ``base`` with the run's options (and ``overrides``)."""
    reranker, source = rala_reranker(context, **overrides)
    return RaLaBenchRetriever(
        base, reranker, context.dataset.questions, source=source, base_name=base_name
    )


@register_method("rala", "RaLa (CoopRAG) late-interaction rerank of the dense top-100, LLM-free")
def build_rala_dense(context: BenchContext) -> RaLaBenchRetriever:
    return build_rala(context, context.dense, "dense")


@register_method("rala-gap", "RaLa with Eq. 4: MaxSim x gap-aware weight, over the dense top-100")
def build_rala_gap(context: BenchContext) -> RaLaBenchRetriever:
    return build_rala(context, context.dense, "dense", scoring="gap-weighted")


@register_method("rala-layer-gap", "RaLa with Eq. 3: per-token layer-gap MaxSim, dense top-100")
def build_rala_layer_gap(context: BenchContext) -> RaLaBenchRetriever:
    return build_rala(context, context.dense, "dense", scoring="layer-gap")


@register_method("rala-bridge", "RaLa rerank of the LLM-free BridgeRAG ranking's top-100")
def build_rala_bridge(context: BenchContext) -> RaLaBenchRetriever:
    from rag_multihop.eval.methods.bridge import build_bridge

    return build_rala(context, build_bridge(context, "embedding"), "bridge (LLM-free)")


# ------------------------------------------------------------------ the LLM path


class CoopBenchRetriever:
    """Runs :class:`~rag_multihop.coop.pipeline.CoopRetriever` per question; keeps the traces and
    the answers (the harness scores ``answers`` with EM/F1)."""

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
                "sub_questions": _summary([len(t.unrolling.sub_questions) for t in traces]),
                "chain_length": _summary([len(t.unrolling.chain) for t in traces]),
                "masked_entities": _summary([t.unrolling.masked for t in traces]),
                "issues": _count(issue for t in traces for issue in t.unrolling.issues),
            },
        }
        rounds = [len(t.rounds) for t in traces if t.stop is not None]
        if rounds:
            extras["keyextract"] = {
                "rounds": _summary(rounds),
                "stops": _count(t.stop for t in traces if t.stop is not None),
            }
        readings = [t.reading for t in traces if t.reading is not None]
        if readings:
            extras["reading"] = {
                "unsupported_spans": _summary([len(r.unsupported) for r in readings]),
                "answers_not_in_passages": sum(not r.answer_supported for r in readings),
                "empty_answers": sum(not r.answer for r in readings),
                "issues": _count(issue for r in readings for issue in r.issues),
            }
        if self.model is not None:
            extras["llm"] = self._llm_report()
        return extras

    def _llm_report(self) -> dict[str, Any]:
        accounts = [t.account for t in self.traces if t.account is not None]
        total = sum(accounts[1:], start=accounts[0]) if accounts else None
        costs = [a.cost for a in accounts]
        stages: dict[str, list[Any]] = {}
        for trace in self.traces:
            for stage, account in trace.accounts.items():
                name = "keyextract" if stage.startswith("keyextract_") else stage
                stages.setdefault(name, []).append(account)
        return {
            "model": self.model,
            "total": None if total is None else total.to_dict(),
            "per_query": {
                "calls": _summary([a.calls for a in accounts]),
                "cache_hits": _summary([a.cache_hits for a in accounts]),
                "prompt_tokens": _summary([a.prompt_tokens for a in accounts]),
                "completion_tokens": _summary([a.completion_tokens for a in accounts]),
                "cost_usd": None
                if any(c is None for c in costs)
                else _summary([float(c) for c in costs if c is not None]),
                "latency_s": _summary(self.latencies),
                "fallbacks": _summary([t.fallbacks for t in self.traces]),
            },
            "per_stage": {
                stage: {
                    "calls_per_query": round(sum(a.calls for a in accounts) / len(self.traces), 3),
                    "prompt_tokens_per_call": _mean_per_call(accounts, "prompt_tokens"),
                    "completion_tokens_per_call": _mean_per_call(accounts, "completion_tokens"),
                    "seconds": _summary(
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
    return DenseRetriever(dense.corpus, dense.index, _raw_encoder(context))


def _raw_encoder(context: BenchContext) -> Any:
    encoder = context.encoder
    return encoder.encoder if isinstance(encoder, CachedEncoder) else encoder


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
    from rag_multihop.eval.methods.bridge import LLM_OPTIONS

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
        extractor = SimilarityKeyExtractor(_raw_encoder(context))
    pipeline = CoopRetriever(
        _text_retriever(context),
        unroller=None if client is None else LLMUnroller(client),
        reranker=reranker,
        reader=None if client is None or not read else ChainReader(client, top_k=settings.top_k),
        key_extractor=extractor,
        settings=settings,
    )
    return CoopBenchRetriever(pipeline, model=llm.model, read=read and client is not None)


@register_method("uar", "CoopRAG UAR: dense search with the LLM-unrolled question (needs --llm)")
def build_uar(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=False, read=False, uar_mode="concatenate")


@register_method(
    "uar-subq", "UAR variant: one dense search per sub-question, PIT-fused (needs --llm)"
)
def build_uar_subq(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=False, read=False, uar_mode="sub-questions")


@register_method(
    "coop", "CoopRAG: unroll, UAR, RaLa, chain completion and answer (EM/F1; needs --llm)"
)
def build_coop_full(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=True)


@register_method(
    "coop-keyextract", "CoopRAG with LLM KeyExtract rounds before reading (needs --llm)"
)
def build_coop_keyextract(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=True, keyextract="llm")


@register_method(
    "keyextract-free",
    "LLM-free KeyExtract: RaLa over dense, then key sentences by similarity (budget rounds)",
)
def build_keyextract_free(context: BenchContext) -> CoopBenchRetriever:
    return build_coop(context, rala=True, read=False, keyextract="similarity", needs_llm=False)
