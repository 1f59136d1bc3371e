"""Every rag-multihop component over a real Chroma server, in Haystack pipelines.

The demo corpus goes into a ``ChromaDocumentStore`` through an indexing pipeline
(``RagMultihopDocumentEmbedder``, the bundled all-MiniLM-L6-v2, then ``DocumentWriter``); then
each component is one change to a plain embedding-retrieval pipeline over
``ChromaEmbeddingRetriever``: ``AssociationRanker`` after the retriever (with a model trained
label-free on the corpus's title mentions, as ``rag-multihop aar train --pair-source corpus``
does), ``EntityGraphRetriever`` + ``PITDocumentJoiner`` where a ``DocumentJoiner`` would be,
and ``BridgeRetriever`` around the retriever. The script prints Recall@2/@5 of each over the
demo questions, and checks that ``run_async`` returns what ``run`` does.

Start a Chroma server first (the ``chromadb`` package installs the command; in production
the same pipelines talk to any Chroma deployment, see docs/vector_stores.md):

    chroma run --path ./chroma-data --host 127.0.0.1 --port 8000
    python integrations/haystack/examples/chroma.py --host 127.0.0.1 --port 8000

The collection ``rag-multihop-demo`` is created afresh on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import chromadb
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack_integrations.common.rag_multihop.convert import documents_to_corpus
from haystack_integrations.components.embedders.rag_multihop import (
    RagMultihopDocumentEmbedder,
    RagMultihopTextEmbedder,
)
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.rankers.rag_multihop import AssociationRanker
from haystack_integrations.components.retrievers.chroma import ChromaEmbeddingRetriever
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    EntityGraphRetriever,
)
from haystack_integrations.document_stores.chroma import ChromaDocumentStore

from rag_multihop.association import AssociationReranker, TrainingConfig, corpus_pairs
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.metrics import recall_at_k

COLLECTION = "rag-multihop-demo"
TOP_K = 10


def dense(store: ChromaDocumentStore) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", RagMultihopTextEmbedder())
    pipeline.add_component("retriever", ChromaEmbeddingRetriever(store, top_k=TOP_K))
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    return pipeline


def with_aar(store: ChromaDocumentStore, model_path: str) -> Pipeline:
    pipeline = dense(store)
    pipeline.add_component("ranker", AssociationRanker(model_path, top_k=TOP_K))  # the change
    pipeline.connect("retriever.documents", "ranker.documents")
    return pipeline


def with_graph(store: ChromaDocumentStore) -> Pipeline:
    pipeline = dense(store)
    pipeline.add_component("graph", EntityGraphRetriever(store, top_k=TOP_K))
    pipeline.add_component("joiner", PITDocumentJoiner(top_k=TOP_K))  # where a DocumentJoiner was
    pipeline.connect("retriever.documents", "graph.documents")  # the dense hits seed the walk
    pipeline.connect("retriever.documents", "joiner.documents")
    pipeline.connect("graph.documents", "joiner.documents")
    return pipeline


def with_bridge(store: ChromaDocumentStore) -> Pipeline:
    pipeline = Pipeline()
    retriever = ChromaEmbeddingRetriever(store, top_k=TOP_K)
    embedder = RagMultihopTextEmbedder()
    pipeline.add_component("bridge", BridgeRetriever(retriever, top_k=TOP_K, embedder=embedder))
    return pipeline


def recalls(rankings: list[list[str]], questions: Any) -> str:
    cells = []
    for k in (2, 5):
        hits = [recall_at_k(r, q.gold_ids, k) for r, q in zip(rankings, questions, strict=True)]
        cells.append(f"R@{k} {100.0 * sum(hits) / len(hits):5.1f}")
    return "  ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description="rag-multihop over a Chroma server")
    parser.add_argument("--host", default="127.0.0.1", help="Chroma server host")
    parser.add_argument("--port", type=int, default=8000, help="Chroma server port")
    args = parser.parse_args()
    data = load_demo_dataset()
    documents = [Document(id=p.id, content=p.text, meta={"title": p.title}) for p in data.corpus]

    client = chromadb.HttpClient(host=args.host, port=args.port)
    if COLLECTION in [c.name for c in client.list_collections()]:
        client.delete_collection(COLLECTION)
    store = ChromaDocumentStore(
        host=args.host, port=args.port, collection_name=COLLECTION, distance_function="cosine"
    )
    indexing = Pipeline()
    indexing.add_component("embedder", RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"]))
    indexing.add_component("writer", DocumentWriter(store))
    indexing.connect("embedder.documents", "writer.documents")
    indexing.run({"embedder": {"documents": documents}})

    encoder = RagMultihopTextEmbedder().encoder
    corpus = documents_to_corpus(documents)
    pairs = corpus_pairs(corpus)  # label-free: passages that name each other's titles
    model = AssociationReranker(encoder=encoder, training=TrainingConfig(epochs=100, seed=0))
    model.fit(corpus.ids, encoder.encode(corpus.texts()), pairs)
    model_path = str(model.save(os.path.join(tempfile.mkdtemp(), "aar")))
    print(
        f"{store.count_documents()} documents in Chroma collection {COLLECTION!r}; "
        f"AAR trained on {len(pairs)} pairs"
    )

    # (pipeline, its inputs for a question, the component whose documents are the answer)
    runs: dict[str, tuple[Pipeline, Callable[[str], dict[str, Any]], str]] = {
        "dense": (dense(store), lambda q: {"text_embedder": {"text": q}}, "retriever"),
        "aar": (
            with_aar(store, model_path),
            lambda q: {"text_embedder": {"text": q}, "ranker": {"query": q}},
            "ranker",
        ),
        "graph+dense": (
            with_graph(store),
            lambda q: {"text_embedder": {"text": q}, "graph": {"query": q}},
            "joiner",
        ),
        "bridge": (with_bridge(store), lambda q: {"bridge": {"query": q}}, "bridge"),
    }
    questions = data.questions
    for name, (pipeline, inputs, answer) in runs.items():
        rankings = [
            [d.id for d in pipeline.run(inputs(q.question))[answer]["documents"]] for q in questions
        ]

        async def arun_all(pipeline: Pipeline = pipeline, inputs: Any = inputs) -> list[Any]:
            return [await pipeline.run_async(inputs(q.question)) for q in questions]

        in_async = [[d.id for d in out[answer]["documents"]] for out in asyncio.run(arun_all())]
        print(f"{name:>12}: {recalls(rankings, questions)}  async = sync: {in_async == rankings}")


if __name__ == "__main__":
    main()
