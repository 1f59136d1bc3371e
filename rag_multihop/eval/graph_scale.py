"""PPR time and memory on synthetic entity graphs: ``python -m rag_multihop.eval.graph_scale``.

A synthetic graph has ``n`` passages and ``entity_ratio * n`` entities; each passage mentions
``mentions`` entities drawn from a Zipf-like popularity (a few hub entities, a long tail, as
in real corpora) and links to ``links`` other passages' titles. For each size the script
reports the edges of the walk's adjacency, the seconds to build its transition matrix, the
median seconds of one PPR query (``queries`` random seeds of 5 passages) by exact power
iteration and by local forward push (:mod:`rag_multihop.graph.push`, ``epsilon`` 1e-5) with
the push's mean L1 error bound, the iterations, the bytes of the transition matrix and the
peak extra memory of one more PPR call of each kind (numpy arrays, traced with
:mod:`tracemalloc`; that call is not timed). ``--no-power`` skips power iteration (seconds
per query at a million passages).

Example (a small run; the documented table uses ``--sizes 10000,100000,1000000``):
    >>> rows = run_scale([2000], queries=2)
    >>> rows[0].passages, rows[0].edges > 0, rows[0].iterations > 0
    (2000, True, True)
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import sparse

from rag_multihop.graph.build import EntityGraph
from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix
from rag_multihop.graph.push import DEFAULT_EPSILON, PushGraph, push_pagerank
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScaleRow:
    """One measured size (see the module docstring)."""

    passages: int
    entities: int
    edges: int
    transition_seconds: float
    ppr_seconds_median: float | None
    iterations: int | None
    transition_mib: float
    ppr_peak_mib: float | None
    push_seconds_median: float
    push_p95_seconds: float
    push_l1_error: float
    push_peak_mib: float


def synthetic_graph(
    n_passages: int,
    *,
    entity_ratio: float = 2.0,
    mentions: int = 10,
    links: int = 1,
    seed: int = 0,
) -> EntityGraph:
    """A random :class:`EntityGraph` shaped like a real one (Zipf-like entity popularity)."""
    n_passages = check_positive_int(n_passages, "n_passages")
    rng = np.random.default_rng(seed)
    n_entities = max(1, int(entity_ratio * n_passages))
    popularity = 1.0 / np.arange(1, n_entities + 1) ** 0.8
    popularity /= popularity.sum()
    rows = np.repeat(np.arange(n_passages), mentions)
    cols = rng.choice(n_entities, size=rows.size, p=popularity)
    incidence = sparse.csr_matrix(
        (np.ones(rows.size), (rows, cols)), shape=(n_passages, n_entities)
    )
    incidence.data[:] = 1.0  # repeated draws collapse to one mention
    link_rows = np.repeat(np.arange(n_passages), links)
    link_cols = (link_rows + rng.integers(1, n_passages, size=link_rows.size)) % n_passages
    title_links = sparse.csr_matrix(
        (np.ones(link_rows.size), (link_rows, link_cols)), shape=(n_passages, n_passages)
    )
    title_links.data[:] = 1.0
    return EntityGraph(
        tuple(f"p{i}" for i in range(n_passages)),
        tuple(f"e{j}" for j in range(n_entities)),
        incidence,
        title_links,
        sparse.csr_matrix((n_entities, n_entities)),
        fingerprint=f"synthetic-{n_passages}-{seed}",
    )


def measure(graph: EntityGraph, *, queries: int = 5, seed: int = 0, power: bool = True) -> ScaleRow:
    """Time the transition matrix and ``queries`` PPR runs of each kind on ``graph``."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    transition = transition_matrix(graph.adjacency())
    transition_seconds = time.perf_counter() - start
    push_graph = PushGraph.from_transition(transition)
    matrix = transition.transposed
    matrix_bytes = matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
    seed_sets = [
        rng.choice(graph.n_passages, size=min(5, graph.n_passages), replace=False)
        for _ in range(check_positive_int(queries, "queries"))
    ]
    times, iterations, push_times, errors = [], [], [], []
    for nodes in seed_sets:
        if power:
            seeds = np.zeros(graph.n_nodes)
            seeds[nodes] = 1.0
            start = time.perf_counter()
            result = personalized_pagerank(transition, seeds)
            times.append(time.perf_counter() - start)
            iterations.append(result.iterations)
        start = time.perf_counter()
        pushed = push_pagerank(push_graph, nodes, epsilon=DEFAULT_EPSILON)
        push_times.append(time.perf_counter() - start)
        errors.append(pushed.residual)
    power_peak = _peak(lambda: personalized_pagerank(transition, seeds)) if power else None
    push_peak = _peak(lambda: push_pagerank(push_graph, seed_sets[-1], epsilon=DEFAULT_EPSILON))
    return ScaleRow(
        passages=graph.n_passages,
        entities=graph.n_entities,
        edges=int(matrix.nnz),
        transition_seconds=round(transition_seconds, 3),
        ppr_seconds_median=round(float(np.median(times)), 4) if power else None,
        iterations=int(np.median(iterations)) if power else None,
        transition_mib=round(matrix_bytes / 2**20, 1),
        ppr_peak_mib=round(power_peak / 2**20, 1) if power_peak is not None else None,
        push_seconds_median=round(float(np.median(push_times)), 4),
        push_p95_seconds=round(float(np.percentile(push_times, 95)), 4),
        push_l1_error=round(float(np.mean(errors)), 3),
        push_peak_mib=round(push_peak / 2**20, 1),
    )


def _peak(call: Callable[[], object]) -> int:
    """Peak bytes numpy allocates during ``call`` (traced, so not timed)."""
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return int(peak)


def run_scale(
    sizes: Sequence[int], *, queries: int = 5, seed: int = 0, power: bool = True
) -> list[ScaleRow]:
    """Build and measure one synthetic graph per size."""
    rows = []
    for size in sizes:
        logger.info("synthetic graph with %d passages", size)
        graph = synthetic_graph(size, seed=seed)
        rows.append(measure(graph, queries=queries, seed=seed, power=power))
    return rows


def markdown(rows: Sequence[ScaleRow]) -> str:
    """The rows as a markdown table."""
    header = (
        "| passages | entities | edges | transition build s | power s / query (median) | "
        "iterations | push ms / query (median / p95) | push L1 error | transition MiB | "
        "power / push peak extra MiB |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.passages:,} | {r.entities:,} | {r.edges:,} | {r.transition_seconds} | "
        f"{_or_dash(r.ppr_seconds_median)} | {_or_dash(r.iterations)} | "
        f"{r.push_seconds_median * 1000:.1f} / {r.push_p95_seconds * 1000:.1f} | "
        f"{r.push_l1_error} | {r.transition_mib} | {_or_dash(r.ppr_peak_mib)} / "
        f"{r.push_peak_mib} |\n"
        for r in rows
    )
    return header + body


def _or_dash(value: float | None) -> str:
    return "—" if value is None else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rag_multihop.eval.graph_scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", default="10000,100000,1000000", help="passage counts")
    parser.add_argument("--queries", type=int, default=5, help="PPR runs per size")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument(
        "--no-power", action="store_true", help="time the local push only (skip power iteration)"
    )
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    rows = run_scale(sizes, queries=args.queries, power=not args.no_power)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([asdict(r) for r in rows], handle, indent=2)
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
