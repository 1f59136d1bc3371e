"""PIT graph-vector fusion in Haystack: embedding retriever + entity-graph retriever + joiner.

Offline, on the bundled demo corpus with the bundled all-MiniLM-L6-v2. The pipeline:

    text_embedder -> dense (InMemoryEmbeddingRetriever, top 20) -+-> joiner (PITDocumentJoiner)
                          \\-> graph (EntityGraphRetriever: seeds = dense top 2) -+

The graph retriever builds the entity graph of the store's documents in ``warm_up``; the
joiner is a drop-in ``DocumentJoiner`` (same ``documents`` input). The script prints
Recall@5 of the dense retriever, of ``DocumentJoiner(distribution_based_rank_fusion)`` in the
joiner's place, and of the PIT joiner, then one question's fused top 5 with the signals.

Run:  python integrations/haystack/examples/fusion.py
"""

# No `from __future__ import annotations`: Haystack reads component annotations at runtime.
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from typing import Any

from haystack import Document, Pipeline
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.retrievers.rag_multihop import EntityGraphRetriever

from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder
from rag_multihop.eval.metrics import recall_at_k

ENCODER = default_encoder()


def build_pipeline(store: InMemoryDocumentStore, joiner: Any) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", RagMultihopTextEmbedder())
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(document_store=store, top_k=20))
    pipeline.add_component("graph", EntityGraphRetriever(store, top_k=20, seed_top_n=2))
    pipeline.add_component("joiner", joiner)
    pipeline.connect("text_embedder.embedding", "dense.query_embedding")
    pipeline.connect("dense.documents", "graph.documents")  # dense top hits seed the walk
    pipeline.connect("dense.documents", "joiner.documents")
    pipeline.connect("graph.documents", "joiner.documents")
    return pipeline


def main() -> None:
    data = load_demo_dataset()
    vectors = ENCODER.encode(data.corpus.texts())
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(
        [
            Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=v.tolist())
            for p, v in zip(data.corpus, vectors, strict=True)
        ]
    )
    joiners = {
        "DocumentJoiner dbsf": DocumentJoiner(join_mode="distribution_based_rank_fusion", top_k=5),
        "PITDocumentJoiner": PITDocumentJoiner(top_k=5, pool_cap=[None, 10]),
    }
    runs: dict[str, list[list[str]]] = {"dense": []}
    example: list[Document] = []
    for name, joiner in joiners.items():
        pipeline = build_pipeline(store, joiner)
        runs[name] = []
        for question in data.questions:
            inputs = {
                "text_embedder": {"text": question.question},
                "graph": {"query": question.question},
            }
            out = pipeline.run(inputs, include_outputs_from={"dense"})
            runs[name].append([d.id for d in out["joiner"]["documents"]])
            if name == "PITDocumentJoiner":
                runs["dense"].append([d.id for d in out["dense"]["documents"]])
                example = example or out["joiner"]["documents"]
    for name, rankings in runs.items():
        pairs = zip(rankings, data.questions, strict=True)
        hits = [recall_at_k(ranking, q.gold_ids, 5) for ranking, q in pairs]
        print(f"R@5 {name:<22} {100.0 * sum(hits) / len(hits):5.1f}")

    question = data.questions[0]
    print(f"\n{question.id}: {question.question}")
    for rank, doc in enumerate(example, start=1):
        mark = "*" if doc.id in question.gold_ids else " "
        signals = ", ".join(f"{k}={v:.3f}" for k, v in doc.meta[SIGNALS_KEY].items())
        print(f"  {rank}. {mark} {doc.id:<26} {doc.score:.3f}  {signals}")


if __name__ == "__main__":
    main()
