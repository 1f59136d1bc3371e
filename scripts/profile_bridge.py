"""Where the LLM-free bridge spends a query: ``cProfile`` around ``retrieve``.

Builds the bench's ``bridge`` on a named dataset exactly as ``rag-multihop perf`` does
(expansion texts precomputed, ``prepare_bridge=1``; the query vector given), runs one
warm-up query, then profiles the next ``--queries`` questions and prints milliseconds per
question (under the profiler) and the top functions by cumulative and by own time.
Run from the repository root (embeddings come from the disk cache of earlier runs)::

    python scripts/profile_bridge.py --dataset 2wiki --queries 100
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from rag_multihop.encoders import CachedEncoder, make_encoder
from rag_multihop.eval import perf
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.methods import get_method


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="2wiki", help="a named dataset")
    parser.add_argument("--data-dir", default="../shared/datasets", help="the datasets folder")
    parser.add_argument("--queries", type=int, default=100, help="questions profiled")
    parser.add_argument("--top", type=int, default=25, help="functions listed per ordering")
    args = parser.parse_args()

    dataset = load_named(args.dataset, args.data_dir)
    context = perf.perf_context(dataset, CachedEncoder(make_encoder("minilm"), None))
    retriever = get_method("bridge").build(context)
    queries = context.queries()[: args.queries + 1]
    retriever.retrieve(queries[0], k=20)  # lazy loads are not a query's cost

    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    for query in queries[1:]:
        retriever.retrieve(query, k=20)
    profile.disable()
    elapsed_ms = (time.perf_counter() - start) * 1000
    print(f"{elapsed_ms / max(1, len(queries) - 1):.1f} ms per question under the profiler")
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
