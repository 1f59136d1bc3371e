"""The methods table's LLM-free methods from a persisted, reopened corpus index vs the benchmark.

For each dataset: the benchmark's own context (shared MiniLM embeddings, cached), the
methods built by the benchmark's factories (in memory, as ``rag-multihop bench`` runs them),
and the same methods served from a ``CorpusIndex`` of the corpus written to a temporary
folder and reopened (``dense_retriever``, ``MultiHopRetriever.from_index``,
``graph_fusion_retriever``, ``bridge_retriever``, and for ``aar`` / ``aar-reverse`` /
``rala`` ``aar_retriever`` / ``rala_retriever`` over the index's sidecars: the benchmark's
trained AAR model (transductive, as in the table; both modes share it) and RaLa's token
states are attached to the index once, then read back, not recomputed). Prints R@2 / R@5 of
both and how many questions got the identical top 10 (ids and scores).

Run from the repository root (embeds once; later runs read the embedding and token-state
caches)::

    python scripts/index_reproduce.py --datasets 2wiki,hotpotqa-500 \
        --methods dense,multihop,pit-boltzmann,bridge,aar,aar-reverse,rala
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_multihop.association.indexed import AssociationSidecar
from rag_multihop.coop.indexed import RaLaSidecar
from rag_multihop.encoders import CachedEncoder, make_encoder
from rag_multihop.eval.context import build_context
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.methods import get_method
from rag_multihop.eval.metrics import recall_at_k
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import (
    CorpusIndex,
    aar_retriever,
    bridge_retriever,
    dense_retriever,
    graph_fusion_retriever,
    rala_retriever,
)


def _recall(rankings, questions, k) -> float:
    values = [recall_at_k(r, q.gold_ids, k) for r, q in zip(rankings, questions, strict=True)]
    return 100 * sum(values) / len(values)


def _served(method: str, snapshot: Any, benches: dict[str, Any], encoder: Any) -> Any:
    """``method`` served from the reopened index (for ``bridge``, ``aar`` / ``aar-reverse``
    and ``rala``: with the benchmark's settings; AAR and RaLa read the sidecars attached
    from its model and states)."""
    if method == "dense":
        return dense_retriever(snapshot, encoder)
    if method == "bridge":
        return bridge_retriever(
            snapshot, encoder=encoder, settings=benches[method].pipeline.settings
        )
    if method == "multihop":
        return MultiHopRetriever.from_index(snapshot, encoder=encoder)
    if method == "pit-boltzmann":
        return graph_fusion_retriever(snapshot, encoder=encoder)
    if method in ("aar", "aar-reverse"):
        scoring = benches[method].settings.scoring
        return aar_retriever(
            snapshot,
            encoder=encoder,
            candidates=scoring.candidates,
            lambda_=scoring.lambda_,
            mode=benches[method].mode,
        )
    if method == "rala":
        reranker = benches["rala"].reranker
        return rala_retriever(
            snapshot, reranker.encoder, dense_encoder=encoder, settings=reranker.settings
        )
    raise SystemExit(f"--methods: {method!r} is not served from an index here")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--datasets", default="2wiki,hotpotqa-500")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/datasets"))
    parser.add_argument(
        "--methods", default="dense,multihop,pit-boltzmann,bridge,aar,aar-reverse,rala"
    )
    args = parser.parse_args()
    encoder = CachedEncoder(make_encoder("minilm"))
    print("| dataset | method | R@2 bench | R@2 index | R@5 bench | R@5 index | same top 10 |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        dataset = load_named(name, args.data_dir)
        context, _ = build_context(dataset, encoder)
        start = time.perf_counter()
        path = Path(tempfile.mkdtemp(prefix="index-reproduce-")) / "idx"
        CorpusIndex.build(path, list(dataset.corpus), context.passage_vectors)
        methods = args.methods.split(",")
        benches = {method: get_method(method).build(context) for method in methods}
        aar = benches.get("aar") or benches.get("aar-reverse")
        if aar is not None:  # the benchmark's trained model (both modes share it), attached once
            [model] = [m.reranker for m in aar.models]
            CorpusIndex(path).attach_sidecar(AssociationSidecar.of(model))
        if "rala" in benches:  # the benchmark's cached token states, attached once
            rala = benches["rala"].reranker
            CorpusIndex(path).attach_sidecar(RaLaSidecar(rala, states=rala.store))
        snapshot = CorpusIndex(path).snapshot()  # reopened: everything read from disk
        took = time.perf_counter() - start
        print(f"<!-- {name}: index built, sidecars attached, reopened in {took:.1f} s -->")
        for method in methods:
            bench, from_index = benches[method], _served(method, snapshot, benches, encoder)
            same = 0
            rankings: dict[str, list[list[str]]] = {"bench": [], "index": []}
            for query in context.queries():
                a = bench.retrieve(query, k=10)
                b = from_index.retrieve(query, k=10)
                rankings["bench"].append([c.id for c in a])
                rankings["index"].append([c.id for c in b])
                same += [(c.id, c.score) for c in a] == [(c.id, c.score) for c in b]
            q = dataset.questions
            print(
                f"| {name} | {method} | {_recall(rankings['bench'], q, 2):.1f} | "
                f"{_recall(rankings['index'], q, 2):.1f} | {_recall(rankings['bench'], q, 5):.1f}"
                f" | {_recall(rankings['index'], q, 5):.1f} | {same} / {len(q)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
