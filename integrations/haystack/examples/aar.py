"""AAR in Haystack: an embedding retriever followed by the AssociationRanker component.

Offline, on the bundled demo corpus: embeds the passages with the bundled all-MiniLM-L6-v2,
trains a small association model on the demo questions' gold pairs (the paper's transductive
setting; a few seconds on CPU), saves it, and runs a pipeline
``query embedder -> InMemoryEmbeddingRetriever (top 100) -> AssociationRanker (top 5)``,
printing the dense top-5 and the AAR top-5 (``*`` marks a gold passage).

Run:  python integrations/haystack/examples/aar.py
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
from haystack_integrations.components.rankers.rag_multihop import AssociationRanker

from rag_multihop.association import AssociationReranker, PairSet, TrainingConfig
from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder

ENCODER = default_encoder()


def show(title: str, documents: list[Document], gold: set[str]) -> None:
    print(f"  {title}")
    for rank, doc in enumerate(documents[:5], start=1):
        mark = "*" if doc.id in gold else " "
        signal = doc.meta.get("rag_multihop_signals", {}).get("association")
        extra = "" if signal is None else f"  association {signal:.3f}"
        print(f"    {rank}. {mark} {doc.id:<26} {doc.score:.3f}{extra}")


def main() -> None:
    data = load_demo_dataset()
    vectors = ENCODER.encode(data.corpus.texts())

    pairs = PairSet.from_gold(data.questions)
    reranker = AssociationReranker(encoder=ENCODER, training=TrainingConfig(epochs=100, seed=0))
    reranker.fit(data.corpus.ids, vectors, pairs)  # records the encoder's fingerprint
    model_dir = reranker.save(os.path.join(tempfile.mkdtemp(), "aar-demo"))
    stats = reranker.provenance["training_stats"]
    print(f"trained on {len(pairs)} gold pairs in {stats['seconds']:.1f} s -> {model_dir}\n")

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(
        [
            Document(id=p.id, content=p.embedding_text, embedding=v.tolist())
            for p, v in zip(data.corpus, vectors, strict=True)
        ]
    )
    pipeline = Pipeline()
    pipeline.add_component("embedder", RagMultihopTextEmbedder())
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=100))
    pipeline.add_component("ranker", AssociationRanker(str(model_dir), top_k=5))
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    pipeline.connect("embedder.embedding", "ranker.query_embedding")
    pipeline.connect("retriever.documents", "ranker.documents")

    for question in data.questions[:4]:
        print(f"{question.id}: {question.question}")
        out = pipeline.run(
            {"embedder": {"text": question.question}, "ranker": {"query": question.question}},
            include_outputs_from={"retriever"},
        )
        gold = set(question.gold_ids)
        show(
            "dense (InMemoryEmbeddingRetriever top-100, first 5)",
            out["retriever"]["documents"],
            gold,
        )
        show("AAR (AssociationRanker)", out["ranker"]["documents"], gold)
        print()
    print("the ranker serialises its settings and the model path, not the weights:")
    print(" ", pipeline.to_dict()["components"]["ranker"]["init_parameters"])


if __name__ == "__main__":
    main()
