"""AAR in LlamaIndex: a VectorStoreIndex retriever followed by the AssociationRerank postprocessor.

Offline, on the bundled demo corpus: embeds the passages with the bundled all-MiniLM-L6-v2,
trains a small association model on the demo questions' gold pairs (the paper's transductive
setting; a few seconds on CPU), saves it, then for a few questions prints the dense top-5 and
the AAR top-5 (``*`` marks a gold passage).

Run:  python integrations/llama-index/examples/aar.py
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import AssociationRerank

from rag_multihop.association import AssociationReranker, PairSet, TrainingConfig
from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import default_encoder


def show(title: str, found: list[NodeWithScore], gold: set[str]) -> None:
    print(f"  {title}")
    for rank, hit in enumerate(found[:5], start=1):
        mark = "*" if hit.node.node_id in gold else " "
        signal = hit.node.metadata.get("rag_multihop_signals", {}).get("association")
        extra = "" if signal is None else f"  association {signal:.3f}"
        print(f"    {rank}. {mark} {hit.node.node_id:<26} {hit.get_score():.3f}{extra}")


def main() -> None:
    data = load_demo_dataset()
    encoder = default_encoder()
    vectors = encoder.encode(data.corpus.texts())

    pairs = PairSet.from_gold(data.questions)
    reranker = AssociationReranker(encoder=encoder, training=TrainingConfig(epochs=100, seed=0))
    reranker.fit(data.corpus.ids, vectors, pairs)  # records the encoder's fingerprint
    model_dir = reranker.save(os.path.join(tempfile.mkdtemp(), "aar-demo"))
    stats = reranker.provenance["training_stats"]
    print(f"trained on {len(pairs)} gold pairs in {stats['seconds']:.1f} s -> {model_dir}\n")

    embed_model = RagMultihopEmbedding(encoder=encoder)
    nodes = [TextNode(id_=p.id, text=p.embedding_text) for p in data.corpus]
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    retriever = index.as_retriever(similarity_top_k=100)  # K = 100, the paper's depth
    rerank = AssociationRerank(model_path=str(model_dir), top_n=5, embed_model=embed_model)

    for question in data.questions[:4]:
        print(f"{question.id}: {question.question}")
        found = retriever.retrieve(question.question)
        gold = set(question.gold_ids)
        show("dense (VectorStoreIndex top-100, first 5)", found, gold)
        show(
            "AAR (AssociationRerank)",
            rerank.postprocess_nodes(found, query_str=question.question),
            gold,
        )
        print()
    # In a query engine: index.as_query_engine(node_postprocessors=[rerank], similarity_top_k=100)


if __name__ == "__main__":
    main()
