"""CoopRAG in LlamaIndex: RaLa reranking and the CoopRAG retriever around a vector retriever.

Offline and LLM-free by default, on the bundled demo corpus with the bundled
all-MiniLM-L6-v2: ``RaLaRerank`` rescores the vector retriever's top 100 by late interaction
over the encoder's token states, and ``CoopRetriever`` does the same inside one retriever
(LLM-free: the question alone, no unrolling). The script prints Recall@2/@5 of the vector
retriever and of RaLa, then one question's top 5 with its signals (``*`` marks a gold passage).

With an LLM (a litellm model string; ``"local"`` runs the embedded SmolLM2, which proves the
path runs and says nothing about quality) the retriever unrolls the question first, and
``CoopQueryEngine`` completes the reasoning chain and answers:

    RAG_MULTIHOP_EXAMPLE_LLM=openai/gpt-4o-mini python integrations/llama-index/examples/coop.py

Run:  python integrations/llama-index/examples/coop.py
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import RaLaRerank
from llama_index.retrievers.rag_multihop import SIGNALS_KEY, CoopQueryEngine, CoopRetriever

from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder
from rag_multihop.eval.metrics import recall_at_k


def recalls(rankings: list[list[str]], questions: Any) -> str:
    cells = []
    for k in (2, 5):
        hits = [recall_at_k(r, q.gold_ids, k) for r, q in zip(rankings, questions, strict=True)]
        cells.append(f"R@{k} {100.0 * sum(hits) / len(hits):5.1f}")
    return "  ".join(cells)


def main() -> None:
    data = load_demo_dataset()
    embed_model = RagMultihopEmbedding(encoder=default_encoder())
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in data.corpus]
    vector = VectorStoreIndex(nodes, embed_model=embed_model).as_retriever(similarity_top_k=100)
    rerank = RaLaRerank(top_n=10)

    vector_rankings, rala_rankings = [], []
    for q in data.questions:
        found = vector.retrieve(q.question)
        vector_rankings.append([n.node.node_id for n in found])
        reranked = rerank.postprocess_nodes(found, query_bundle=QueryBundle(q.question))
        rala_rankings.append([n.node.node_id for n in reranked])
    print(f"LLM-free; {len(data.questions)} demo questions")
    print(f" vector: {recalls(vector_rankings, data.questions)}")
    print(f"   RaLa: {recalls(rala_rankings, data.questions)}")

    llm = os.environ.get("RAG_MULTIHOP_EXAMPLE_LLM")  # None: the LLM-free mode
    coop = CoopRetriever(vector, llm=llm, similarity_top_k=5)
    question = data.questions[1]
    print(f"\n{question.question}  (gold: {', '.join(question.gold_ids)})")
    for rank, item in enumerate(coop.retrieve(question.question), start=1):
        mark = "*" if item.node.node_id in question.gold_ids else " "
        signals = item.node.metadata[SIGNALS_KEY]
        shown = {k: round(v, 3) for k, v in signals.items() if k in ("dense", "rala")}
        print(f"  {rank}. {mark} {item.node.node_id:<28} {item.score:6.3f}  {shown}")

    if llm:
        response = CoopQueryEngine(retriever=coop).query(question.question)
        print(f"\nanswer ({llm}): {response}  (gold: {question.answers[0]})")
        print("chain:", response.metadata["chain"])
        print("spans not in the passages:", response.metadata["unsupported_spans"])


if __name__ == "__main__":
    main()
