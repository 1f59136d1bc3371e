"""PPR time and memory on synthetic entity graphs: ``python -m rag_multihop.eval.graph_scale``.

A synthetic graph has ``n`` passages and ``entity_ratio * n`` entities; each passage mentions
``mentions`` entities drawn from a Zipf-like popularity (a few hub entities, a long tail, as
in real corpora) and links to ``links`` other passages' titles. For each size the script
reports the edges of the walk's adjacency, the seconds to build its transition matrix, the
median seconds of one PPR query (``queries`` random seeds of 5 passages), the iterations,
the bytes of the transition matrix and the peak extra memory of one more PPR call (numpy
arrays, traced with :mod:`tracemalloc`; that call is not timed).

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
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import sparse

from rag_multihop.graph.build import EntityGraph
from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScaleRow:
    """One measured size (see the module docstring)."""

    passages: int
    entities: int
    edges: int
    transition_seconds: float
    ppr_seconds_median: float
    iterations: int
    transition_mib: float
    ppr_peak_mib: float


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


def measure(graph: EntityGraph, *, queries: int = 5, seed: int = 0) -> ScaleRow:
    """Time the transition matrix and ``queries`` PPR runs on ``graph``."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    transition = transition_matrix(graph.adjacency())
    transition_seconds = time.perf_counter() - start
    matrix = transition.transposed
    matrix_bytes = matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
    times, iterations = [], []
    for _ in range(check_positive_int(queries, "queries")):
        seeds = np.zeros(graph.n_nodes)
        seeds[rng.choice(graph.n_passages, size=min(5, graph.n_passages), replace=False)] = 1.0
        start = time.perf_counter()
        result = personalized_pagerank(transition, seeds)
        times.append(time.perf_counter() - start)
        iterations.append(result.iterations)
    tracemalloc.start()  # one more, traced, run for the memory (tracing slows it down)
    personalized_pagerank(transition, seeds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return ScaleRow(
        passages=graph.n_passages,
        entities=graph.n_entities,
        edges=int(matrix.nnz),
        transition_seconds=round(transition_seconds, 3),
        ppr_seconds_median=round(float(np.median(times)), 4),
        iterations=int(np.median(iterations)),
        transition_mib=round(matrix_bytes / 2**20, 1),
        ppr_peak_mib=round(peak / 2**20, 1),
    )


def run_scale(sizes: Sequence[int], *, queries: int = 5, seed: int = 0) -> list[ScaleRow]:
    """Build and measure one synthetic graph per size."""
    rows = []
    for size in sizes:
        logger.info("synthetic graph with %d passages", size)
        rows.append(measure(synthetic_graph(size, seed=seed), queries=queries, seed=seed))
    return rows


def markdown(rows: Sequence[ScaleRow]) -> str:
    """The rows as a markdown table."""
    header = (
        "| passages | entities | edges | transition build s | PPR s / query (median) | "
        "iterations | transition MiB | PPR peak extra MiB |\n|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.passages:,} | {r.entities:,} | {r.edges:,} | {r.transition_seconds} | "
        f"{r.ppr_seconds_median} | {r.iterations} | {r.transition_mib} | {r.ppr_peak_mib} |\n"
        for r in rows
    )
    return header + body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rag_multihop.eval.graph_scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", default="10000,100000,1000000", help="passage counts")
    parser.add_argument("--queries", type=int, default=5, help="PPR runs per size")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    rows = run_scale(sizes, queries=args.queries)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([asdict(r) for r in rows], handle, indent=2)
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
