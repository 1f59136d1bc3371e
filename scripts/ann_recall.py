"""Recall of the corpus index's ANN (FAISS HNSW32) against exact search on real vectors.

Reads every 384-dimensional vector of the MiniLM embedding cache (the passages and
questions the benchmarks embedded, ``~/.cache/rag_multihop/embeddings``), holds out 300 as
queries, indexes the rest with ``HNSW32`` (inner product, as ``IndexSettings(ann="HNSW32")``
stores per segment) and prints R@1 / R@10 / R@50 against the exact top lists per
``efSearch``. Run from the repository root after any benchmark has filled the cache::

    python scripts/ann_recall.py
"""

from __future__ import annotations

import time
from pathlib import Path

import faiss
import numpy as np

CACHE = Path.home() / ".cache/rag_multihop/embeddings/sentence-transformers_all-MiniLM-L6-v2"


def main() -> None:
    found = []
    for shard in sorted(CACHE.glob("*.npz")):
        with np.load(shard) as arrays:
            for key in arrays.files:
                value = arrays[key]
                if value.ndim == 2 and value.shape[1] == 384 and value.dtype.kind == "f":
                    found.append(value.astype(np.float32))
    if not found:
        raise SystemExit(f"no cached MiniLM vectors under {CACHE}: run a benchmark first")
    vectors = np.unique(np.concatenate(found), axis=0)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.random.default_rng(0).shuffle(vectors)
    queries, base = vectors[:300], vectors[300:]
    ann = faiss.IndexHNSWFlat(base.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    start = time.perf_counter()
    ann.add(base)
    print(f"{len(base)} vectors indexed in {time.perf_counter() - start:.1f} s")
    exact = np.argsort(-(queries @ base.T), axis=1)[:, :50]
    for ef in (16, 64, 128, 256):
        line = []
        for k in (1, 10, 50):
            params = faiss.SearchParametersHNSW(efSearch=max(ef, k))
            _, top = ann.search(queries, k, params=params)
            hits = [len(set(a) & set(b[:k])) / k for a, b in zip(top, exact, strict=True)]
            line.append(f"R@{k} {np.mean(hits):.3f}")
        print(f"efSearch {ef}: " + ", ".join(line))


if __name__ == "__main__":
    main()
