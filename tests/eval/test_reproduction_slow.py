"""Full-dataset checks against independently measured numbers (minutes; `-m slow`)."""

from __future__ import annotations

import pytest

from rag_multihop.encoders import CachedEncoder
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.harness import run_benchmark

# Independent implementation: MiniLM, passages as title + "\n" + text, FAISS flat IP.
REFERENCE_DENSE = {"2wiki": (51.3, 61.8), "hotpotqa-500": (58.0, 73.6)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REFERENCE_DENSE))
def test_dense_recall_matches_the_independent_reference(name, shared_datasets, minilm):
    dataset = load_named(name, shared_datasets)
    result = run_benchmark(dataset, ["dense"], encoder=CachedEncoder(minilm), ks=(2, 5))
    recall = result.methods["dense"].recall
    r2, r5 = REFERENCE_DENSE[name]
    assert abs(100 * recall[2] - r2) <= 0.5
    assert abs(100 * recall[5] - r5) <= 0.5
