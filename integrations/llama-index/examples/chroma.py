"""Every rag-multihop component over a real Chroma server, in LlamaIndex.

The demo corpus goes into a Chroma collection through a ``VectorStoreIndex`` (embedded with
the bundled all-MiniLM-L6-v2, set once in ``Settings``); then each component is one line on
top of ``index.as_retriever()``: ``AssociationRerank`` (with a model trained label-free on
the corpus's title mentions, as ``rag-multihop aar train --pair-source corpus`` does),
``EntityGraphRetriever`` fused by ``PITFusionRetriever``, and ``BridgeRetriever``. The script
prints Recall@2/@5 of each over the demo questions, and checks that the async path
(``aretrieve``) returns what the sync one does.

Start a Chroma server first (the ``chromadb`` package installs the command; in production
the same code talks to any Chroma deployment, see docs/vector_stores.md):

    chroma run --path ./chroma-data --host 127.0.0.1 --port 8000
    python integrations/llama-index/examples/chroma.py --host 127.0.0.1 --port 8000

The collection ``rag-multihop-demo`` is created afresh on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import chromadb
from llama_index.core import Settings, StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import AssociationRerank
from llama_index.retrievers.rag_multihop import (
    BridgeRetriever,
    EntityGraphRetriever,
    PITFusionRetriever,
    nodes_to_corpus,
)
from llama_index.vector_stores.chroma import ChromaVectorStore

from rag_multihop.association import AssociationReranker, TrainingConfig, corpus_pairs
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.metrics import recall_at_k

COLLECTION = "rag-multihop-demo"


class Reranked(BaseRetriever):
    """``retriever`` followed by ``postprocessor`` (what a query or chat engine does)."""

    def __init__(self, retriever: BaseRetriever, postprocessor: BaseNodePostprocessor) -> None:
        self.retriever, self.postprocessor = retriever, postprocessor
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.retriever.retrieve(query_bundle)
        return self.postprocessor.postprocess_nodes(found, query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = await self.retriever.aretrieve(query_bundle)
        return await self.postprocessor.apostprocess_nodes(found, query_bundle)


def recalls(rankings: list[list[str]], questions: Any) -> str:
    cells = []
    for k in (2, 5):
        hits = [recall_at_k(r, q.gold_ids, k) for r, q in zip(rankings, questions, strict=True)]
        cells.append(f"R@{k} {100.0 * sum(hits) / len(hits):5.1f}")
    return "  ".join(cells)


async def aretrieve_all(retriever: BaseRetriever, questions: Any) -> list[list[str]]:
    found = await asyncio.gather(*(retriever.aretrieve(q.question) for q in questions))
    return [[n.node.node_id for n in nodes] for nodes in found]


def main() -> None:
    parser = argparse.ArgumentParser(description="rag-multihop over a Chroma server")
    parser.add_argument("--host", default="127.0.0.1", help="Chroma server host")
    parser.add_argument("--port", type=int, default=8000, help="Chroma server port")
    args = parser.parse_args()
    data = load_demo_dataset()
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in data.corpus]

    Settings.embed_model = RagMultihopEmbedding()  # or the app's own embed model
    client = chromadb.HttpClient(host=args.host, port=args.port)
    if COLLECTION in [c.name for c in client.list_collections()]:
        client.delete_collection(COLLECTION)
    collection = client.create_collection(COLLECTION, metadata={"hnsw:space": "cosine"})
    vector_store = ChromaVectorStore(chroma_collection=collection)
    storage_context = StorageContext.from_defaults(vector_store=vector_store)
    index = VectorStoreIndex(nodes, storage_context=storage_context)
    vector = index.as_retriever(similarity_top_k=10)

    corpus = nodes_to_corpus(nodes)
    encoder = Settings.embed_model.encoder
    pairs = corpus_pairs(corpus)  # label-free: passages that name each other's titles
    model = AssociationReranker(encoder=encoder, training=TrainingConfig(epochs=100, seed=0))
    model.fit(corpus.ids, encoder.encode(corpus.texts()), pairs)
    model_path = str(model.save(os.path.join(tempfile.mkdtemp(), "aar")))
    print(
        f"{len(nodes)} nodes in Chroma collection {COLLECTION!r}; AAR trained on {len(pairs)} pairs"
    )

    graph = EntityGraphRetriever.from_nodes(nodes, seed_retriever=vector, similarity_top_k=10)
    retrievers = {
        "vector": vector,
        "aar": Reranked(vector, AssociationRerank(model_path=model_path, top_n=10)),
        "graph+vector": PITFusionRetriever([vector, graph], similarity_top_k=10),
        "bridge": BridgeRetriever(vector, similarity_top_k=10),
    }
    questions = data.questions
    for name, retriever in retrievers.items():
        rankings = [[n.node.node_id for n in retriever.retrieve(q.question)] for q in questions]
        same = asyncio.run(aretrieve_all(retriever, questions)) == rankings
        print(f"{name:>13}: {recalls(rankings, questions)}  async = sync: {same}")


if __name__ == "__main__":
    main()
