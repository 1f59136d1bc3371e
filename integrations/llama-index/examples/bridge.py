"""BridgeRAG in LlamaIndex: a VectorStoreIndex retriever wrapped by ``BridgeRetriever``.

Offline and LLM-free by default, on the bundled demo corpus with the bundled
all-MiniLM-L6-v2: hop 1 takes the vector retriever's top node as the bridge, heuristic
entities of the bridge and template queries widen the pool, and the embedding +
title-mention judge ranks it (PIT-fused with the retrieval scores). The script prints
Recall@2/@5 of the vector retriever and of BridgeRAG, then one question's top 5 with its
signals (``*`` marks a gold passage).

Switch on an LLM by passing a litellm model string (the key is read from the environment at
call time; nothing else changes):

    BridgeRetriever(vector, similarity_top_k=10, llm="openai/gpt-4o-mini")   # OPENAI_API_KEY
    BridgeRetriever(vector, llm="openai/qwen2.5-7b-instruct", api_base="http://localhost:8000/v1")

or set ``RAG_MULTIHOP_EXAMPLE_LLM=openai/gpt-4o-mini`` to run this script in LLM mode.

Run:  python integrations/llama-index/examples/bridge.py
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import BridgeJudgeRerank
from llama_index.retrievers.rag_multihop import SIGNALS_KEY, BridgeRetriever

from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder
from rag_multihop.eval.metrics import recall_at_k


def recalls(retriever: BaseRetriever, questions: Any) -> str:
    rankings = [[n.node.node_id for n in retriever.retrieve(q.question)] for q in questions]
    cells = []
    for k in (2, 5):
        hits = [recall_at_k(r, q.gold_ids, k) for r, q in zip(rankings, questions, strict=True)]
        cells.append(f"R@{k} {100.0 * sum(hits) / len(hits):5.1f}")
    return "  ".join(cells)


def main() -> None:
    data = load_demo_dataset()
    encoder = default_encoder()
    embed_model = RagMultihopEmbedding(encoder=encoder)
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in data.corpus]
    vector = VectorStoreIndex(nodes, embed_model=embed_model).as_retriever(similarity_top_k=10)

    llm = os.environ.get("RAG_MULTIHOP_EXAMPLE_LLM")  # None: the LLM-free mode
    bridge = BridgeRetriever(vector, similarity_top_k=10, llm=llm, embed_model=embed_model)
    print(f"mode: {'LLM ' + llm if llm else 'LLM-free'}; {len(data.questions)} demo questions")
    for name, retriever in (("vector", vector), ("bridge", bridge)):
        print(f"{name:>7}: {recalls(retriever, data.questions)}")

    question = data.questions[1]
    print(f"\n{question.question}  (gold: {', '.join(question.gold_ids)})")
    for rank, item in enumerate(bridge.retrieve(question.question)[:5], start=1):
        mark = "*" if item.node.node_id in question.gold_ids else " "
        signals = item.node.metadata[SIGNALS_KEY]
        shown = {k: round(v, 2) for k, v in signals.items() if k in ("bridge", "judge", "fused")}
        print(f"  {rank}. {mark} {item.node.node_id:<28} {item.score:6.3f}  {shown}")

    # The judge alone, as a postprocessor over any retrieved list (the top node is the bridge).
    rerank = BridgeJudgeRerank(top_n=5, llm=llm, embed_model=embed_model)
    judged = rerank.postprocess_nodes(
        vector.retrieve(question.question), query_str=question.question
    )
    print("\njudge postprocessor:", [n.node.node_id for n in judged])


if __name__ == "__main__":
    main()
