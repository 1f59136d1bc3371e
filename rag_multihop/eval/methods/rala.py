"""The RaLa benchmark methods (CoopRAG's LLM-free reranker) and its ablations.

- ``rala``: the shared dense top-K (K = ``rala_candidates``, 100) reranked by RaLa with the
  scoring of ``rala_scoring`` (default ``maxsim``).
- ``rala-gap``: the same with Eq. 4 (``gap-weighted``); ``rala-layer-gap``: Eq. 3.
- ``rala-bridge``: the LLM-free BridgeRAG ranking's top-K reranked by RaLa.

Passage token states are computed once per dataset and layout and cached on disk
(``$RAG_MULTIHOP_CACHE/token_states``, default ``~/.cache/rag_multihop/token_states``), so
latency is the query's: its token states, the store lookups and the scoring. The cache keeps
the float16 states (the default codec); another codec (``rala_codec=residual-2bit``, ...)
is fitted on them and cached beside them, so codecs are compared on the very same states.

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
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rag_multihop.coop.rala import RaLaReranker
from rag_multihop.coop.settings import RaLaSettings
from rag_multihop.coop.states import HiddenStateEncoder
from rag_multihop.coop.store import PassageStates
from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.methods.bridge import build_bridge
from rag_multihop.eval.options import FLATTEN
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.eval.report import summarize
from rag_multihop.paths import cache_dir
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


RALA_OPTIONS = declare_settings("rala", RaLaBenchSettings, prefix="rala_")
"""``rala_*`` options: every :class:`RaLaSettings` field and ``rala_token_states``."""


def _store_key(context: BenchContext, reranker: RaLaReranker) -> str:
    """The float16 states' cache key (the same as before codecs existed)."""
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
    """The corpus's states in ``reranker``'s layout and codec: from the run, the disk cache,
    or built (float16 first, then packed by the codec)."""
    key = _store_key(context, reranker)
    raw = context.memo(f"rala-store:{key}", lambda: _load_or_build(context, reranker, key))
    codec = reranker.settings.codec
    if codec == raw.codec.name:
        return raw
    return context.memo(
        f"rala-store:{key}:{codec}", lambda: _load_or_recode(context, raw, f"{key}-{codec}", codec)
    )


def _cached(context: BenchContext, key: str) -> PassageStates | None:
    folder = cache_dir("token_states") / key
    if not (folder / "CURRENT").is_file():
        return None
    try:
        store = PassageStates.load(folder)
    except (OSError, ValueError) as exc:
        logger.warning("rebuilding the token-state cache %s: %s", folder, exc)
        return None
    return store if store.ids == list(context.dataset.corpus.ids) else None


def _load_or_build(context: BenchContext, reranker: RaLaReranker, key: str) -> PassageStates:
    store = _cached(context, key)
    if store is None:
        logger.info("computing token states of %d passages", len(context.dataset.corpus))
        store = PassageStates.build(
            list(context.dataset.corpus),
            reranker.encoder,
            reranker.layout,
            pooling=reranker.pooling,
            drop_punctuation=reranker.settings.drop_punctuation,
            codec="float16",
        )
        store.save(cache_dir("token_states") / key)
    return store


def _load_or_recode(
    context: BenchContext, raw: PassageStates, key: str, codec: str
) -> PassageStates:
    store = _cached(context, key)
    if store is None:
        logger.info("packing the token states of %d passages with %s", len(raw), codec)
        store = raw.recode(codec)
        store.save(cache_dir("token_states") / key)
    return store


def _hidden_state_encoder(context: BenchContext) -> HiddenStateEncoder:
    """The benchmark encoder's hidden states (one loaded model per run)."""
    return context.memo(
        "rala-encoder",
        lambda: HiddenStateEncoder(context.raw_encoder, name=context.encoder.name),
    )


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
            "rerank_ms": summarize(self._rerank_ms),
            "auc_vs_gold": {k: round(float(np.mean(v)), 4) for k, v in self._auc.items()},
        }
        if store is not None:
            extras["store"] = {
                "passages": len(store),
                "megabytes": round(store.nbytes / 1e6, 2),
                "bytes_per_passage": round(store.bytes_per_passage, 1),
                "tokens_per_passage": round(store.mean_tokens, 1),
                "codec": store.codec.name,
                "dense_bytes_per_passage": 4 * store.dim,
            }
        if self._spread:
            extras["gap_weight_log_spread_over_maxsim"] = summarize(self._spread)
        return extras


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
    return build_rala(context, build_bridge(context, "embedding"), "bridge (LLM-free)")
