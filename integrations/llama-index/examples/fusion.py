"""PIT graph-vector fusion in LlamaIndex: a VectorStoreIndex retriever + an entity-graph retriever.

Offline, on the bundled demo corpus with the bundled all-MiniLM-L6-v2. The entity graph is
built from the same nodes (heuristic entities, title links, synonym edges from the same
embed model); its walk is seeded by the query's entities and the vector retriever's top 2.
``PITFusionRetriever`` fuses the two lists where ``QueryFusionRetriever`` would: PIT
calibration, Boltzmann fusion, the graph's pool capped at its 10 best nodes. The script
prints Recall@5 of the vector retriever, of ``QueryFusionRetriever(dist_based_score)`` over
the same two retrievers, and of the PIT fusion, then one question's fused top 5 with the
signals (``*`` marks a gold passage).

Run:  python integrations/llama-index/examples/fusion.py
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    EntityGraphRetriever,
    PITFusionRetriever,
)

from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.metrics import recall_at_k


def recall_at_5(retriever: BaseRetriever, questions: Any) -> float:
    hits = [
        recall_at_k([n.node.node_id for n in retriever.retrieve(q.question)], q.gold_ids, 5)
        for q in questions
    ]
    return 100.0 * sum(hits) / len(hits)


def main() -> None:
    data = load_demo_dataset()
    embed_model = RagMultihopEmbedding()
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in data.corpus]
    index = VectorStoreIndex(nodes, embed_model=embed_model)

    vector = index.as_retriever(similarity_top_k=20)
    graph = EntityGraphRetriever.from_nodes(
        nodes,
        seed_retriever=index.as_retriever(similarity_top_k=2),
        embed_model=embed_model,  # synonym edges between entity names (cosine >= 0.85)
        similarity_top_k=20,
    )
    print(f"entity graph: {graph.graph.n_entities} entities, edges {graph.graph.edge_counts}\n")

    pit = PITFusionRetriever(
        [vector, graph], similarity_top_k=5, names=["dense", "graph"], pool_cap=[None, 10]
    )
    peer = QueryFusionRetriever(
        [vector, graph],
        llm=MockLLM(),
        mode="dist_based_score",  # type: ignore[arg-type]
        similarity_top_k=5,
        num_queries=1,
        use_async=False,
    )
    top5 = index.as_retriever(similarity_top_k=5)
    for name, retriever in [("dense", top5), ("QueryFusionRetriever dbsf", peer), ("PIT", pit)]:
        print(f"R@5 {name:<26} {recall_at_5(retriever, data.questions):5.1f}")

    question = data.questions[0]
    gold = set(question.gold_ids)
    print(f"\n{question.id}: {question.question}")
    for rank, hit in enumerate(pit.retrieve(question.question), start=1):
        mark = "*" if hit.node.node_id in gold else " "
        signals = ", ".join(f"{k}={v:.3f}" for k, v in hit.node.metadata[SIGNALS_KEY].items())
        print(f"  {rank}. {mark} {hit.node.node_id:<26} {hit.get_score():.3f}  {signals}")


if __name__ == "__main__":
    main()
