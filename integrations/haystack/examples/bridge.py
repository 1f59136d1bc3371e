"""BridgeRAG in Haystack: ``BridgeRetriever`` around an ``InMemoryEmbeddingRetriever``.

Offline and LLM-free by default, on the bundled demo corpus with the bundled
all-MiniLM-L6-v2 (which embeds the documents, the query texts and the judge's texts). The
script prints Recall@2/@5 of the plain embedding retriever and of BridgeRAG in a pipeline,
one question's top 5 with its trace, and the pipeline's YAML (the model string and the key
variable's name only, never a key).

Switch on an LLM with a litellm model string; the key is read from the environment at call
time:

    BridgeRetriever(retriever, llm="openai/gpt-4o-mini",
                    api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False))

or set ``RAG_MULTIHOP_EXAMPLE_LLM=openai/gpt-4o-mini`` to run this script in LLM mode.

Run:  python integrations/haystack/examples/bridge.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.components.rankers.rag_multihop import BridgeJudgeRanker
from haystack_integrations.components.retrievers.rag_multihop import BridgeRetriever

from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder
from rag_multihop.eval.metrics import recall_at_k


def recalls(rankings: list[list[str]], gold: list[tuple[str, ...]]) -> str:
    cells = []
    for k in (2, 5):
        hits = [recall_at_k(r, g, k) for r, g in zip(rankings, gold, strict=True)]
        cells.append(f"R@{k} {100.0 * sum(hits) / len(hits):5.1f}")
    return "  ".join(cells)


def main() -> None:
    data = load_demo_dataset()
    encoder = default_encoder()
    vectors = encoder.encode(data.corpus.texts())
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=v.tolist())
            for p, v in zip(data.corpus, vectors, strict=True)
        ]
    )
    retriever = InMemoryEmbeddingRetriever(store, top_k=10)

    llm = os.environ.get("RAG_MULTIHOP_EXAMPLE_LLM")  # None: the LLM-free mode
    key = Secret.from_env_var("OPENAI_API_KEY", strict=False) if llm else None
    pipeline = Pipeline()
    pipeline.add_component("bridge", BridgeRetriever(retriever, top_k=10, llm=llm, api_key=key))

    questions = data.questions
    gold = [q.gold_ids for q in questions]
    query_vectors = encoder.encode([q.question for q in questions])
    plain = [
        [d.id for d in retriever.run(query_embedding=v.tolist())["documents"]]
        for v in query_vectors
    ]
    outputs = [pipeline.run({"bridge": {"query": q.question}})["bridge"] for q in questions]
    bridged = [[d.id for d in out["documents"]] for out in outputs]
    print(f"mode: {'LLM ' + llm if llm else 'LLM-free'}; {len(questions)} demo questions")
    print(f"embedding retriever: {recalls(plain, gold)}")
    print(f"BridgeRetriever:     {recalls(bridged, gold)}")

    question, out = questions[1], outputs[1]
    print(f"\n{question.question}  (gold: {', '.join(question.gold_ids)})")
    for rank, doc in enumerate(out["documents"][:5], start=1):
        mark = "*" if doc.id in question.gold_ids else " "
        print(f"  {rank}. {mark} {doc.id:<28} {doc.score:6.3f}")
    trace = out["trace"]
    pool = len(trace["pool_ids"])
    print(f"  bridge {trace['bridge_id']}, entities {trace['entities']}, pool {pool}")

    # The judge alone, as a ranker over any retrieved documents (the top one is the bridge).
    ranker = BridgeJudgeRanker(top_k=5, llm=llm, api_key=key)
    ranked = ranker.run(
        query=question.question,
        documents=retriever.run(query_embedding=query_vectors[1].tolist())["documents"],
    )
    print("\njudge ranker:", [d.id for d in ranked["documents"]])
    print("\n" + pipeline.dumps()[-400:])


if __name__ == "__main__":
    main()
