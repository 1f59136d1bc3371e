"""CoopRAG in Haystack: the RaLa ranker in a pipeline, and the CoopRAG retriever + chain
answer generator.

Offline and LLM-free by default, on the bundled demo corpus with the bundled
all-MiniLM-L6-v2: an ``InMemoryEmbeddingRetriever`` returns the top 100 and ``RaLaRanker``
rescores them by late interaction over the encoder's token states. The script prints
Recall@2/@5 of the plain retriever and of the pipeline with RaLa, then one question's top 5
from ``CoopRetriever`` (UAR + RaLa in one component; LLM-free: the question alone).

With an LLM (a litellm model string; ``"local"`` runs the embedded SmolLM2, which proves the
path runs and says nothing about quality) ``CoopRetriever`` unrolls the question and
``ChainAnswerGenerator`` completes the reasoning chain and answers:

    RAG_MULTIHOP_EXAMPLE_LLM=openai/gpt-4o-mini python integrations/haystack/examples/coop.py

Run:  python integrations/haystack/examples/coop.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
from haystack_integrations.components.generators.rag_multihop import ChainAnswerGenerator
from haystack_integrations.components.rankers.rag_multihop import RaLaRanker
from haystack_integrations.components.retrievers.rag_multihop import CoopRetriever

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
    vectors = encoder.encode([p.embedding_text for p in data.corpus])
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=v.tolist())
            for p, v in zip(data.corpus, vectors, strict=True)
        ]
    )
    embedder = RagMultihopTextEmbedder()
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", embedder)
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=100))
    pipeline.add_component("ranker", RaLaRanker(top_k=10))
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    pipeline.connect("retriever.documents", "ranker.documents")

    plain, rala = [], []
    for q in data.questions:
        out = pipeline.run(
            {"text_embedder": {"text": q.question}, "ranker": {"query": q.question}},
            include_outputs_from={"retriever"},
        )
        plain.append([d.id for d in out["retriever"]["documents"]])
        rala.append([d.id for d in out["ranker"]["documents"]])
    gold = [q.gold_ids for q in data.questions]
    print(f"LLM-free; {len(data.questions)} demo questions")
    print(f" embedding retriever: {recalls(plain, gold)}")
    print(f"     + RaLa reranker: {recalls(rala, gold)}")

    llm = os.environ.get("RAG_MULTIHOP_EXAMPLE_LLM")  # None: the LLM-free mode
    coop = CoopRetriever(InMemoryEmbeddingRetriever(store), top_k=5, llm=llm, embedder=embedder)
    question = data.questions[1]
    result = coop.run(query=question.question)
    print(f"\n{question.question}  (gold: {', '.join(question.gold_ids)})")
    for rank, document in enumerate(result["documents"], start=1):
        mark = "*" if document.id in question.gold_ids else " "
        print(f"  {rank}. {mark} {document.id:<28} {document.score:6.3f}")
    if llm:
        reader = ChainAnswerGenerator(llm=llm, top_k=5)
        answered = reader.run(
            query=question.question, documents=result["documents"], unrolling=result["unrolling"]
        )
        answer = answered["answers"][0]
        print(f"\nanswer ({llm}): {answer.data}  (gold: {question.answers[0]})")
        print("chain:", answer.meta["chain"])
        print("spans not in the passages:", answer.meta["unsupported_spans"])


if __name__ == "__main__":
    main()
