"""The adapters' own overhead: LlamaIndex and Haystack ``BridgeRetriever`` against the core.

Builds a 30-passage index of the demo corpus (the gold passages of the first ten demo
questions plus fillers) with the bundled MiniLM, and runs the LLM-free BridgeRAG per question:

- ``core``: :class:`rag_multihop.bridge.BridgeRetriever` over a ``DenseRetriever``;
- ``batch``: one encoder call on the texts the core searches after hop 1 (its entities and
  queries), the "one batched embedding call" of the target;
- ``li`` / ``li-async``: the LlamaIndex adapter around ``VectorStoreIndex.as_retriever()``
  with ``RagMultihopEmbedding`` (each search step's texts embedded in one batch);
  ``li-per-text``: the same with the wrapped retriever embedding each text itself (the
  adapter before batching);
- ``hs-*``: the Haystack adapter around ``InMemoryEmbeddingRetriever`` with a rag-multihop
  text embedder, a document embedder, and a plain text embedder (one ``run`` per text, as
  any Haystack text embedder).

Every round runs each question through each variant in turn (so load on a shared machine
hits all alike) and prints the median milliseconds per query, the ratio to ``core`` and the
target ``2 × core + batch`` (issue 11). Run from the repository root::

    python scripts/bridge_adapter_overhead.py --rounds 3 --threads 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from haystack import Document, component
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.embedders.rag_multihop import (
    RagMultihopDocumentEmbedder,
    RagMultihopTextEmbedder,
)
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever as HaystackBridge,
)
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.retrievers.rag_multihop import BridgeRetriever as LlamaIndexBridge
from llama_index.retrievers.rag_multihop.bridge import NodeSearcher

from rag_multihop import Corpus, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.demo import load_demo_dataset
from rag_multihop.encoders import Encoder, default_encoder
from rag_multihop.index.dense import DenseRetriever

K = 10
PASSAGES = 30
QUESTIONS = 10


@component
class PlainTextEmbedder:
    """A Haystack text embedder with no batch API (as ``SentenceTransformersTextEmbedder``
    or ``OpenAITextEmbedder`` appear to the adapter): one ``run`` per text."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = None  # hides the encoder: the adapter sees a plain component
        self._inner = encoder

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        return {"embedding": self._inner.encode([text])[0].tolist()}


def small_corpus() -> tuple[Corpus, list[str]]:
    data = load_demo_dataset()
    questions = data.questions[:QUESTIONS]
    gold = {pid for q in questions for pid in q.gold_ids}
    ids = [p.id for p in data.corpus if p.id in gold]
    ids += [p.id for p in data.corpus if p.id not in gold][: PASSAGES - len(ids)]
    return Corpus([data.corpus[pid] for pid in ids]), [q.question for q in questions]


def variants(corpus: Corpus, encoder: Encoder) -> dict[str, Callable[[str], Any]]:
    core = BridgeRetriever.llm_free(DenseRetriever.from_corpus(corpus, encoder))
    expansions = {}

    def batch(question: str) -> Any:
        if question not in expansions:
            trace = core.run(Query(question), K).trace
            expansions[question] = [*trace.queries, *trace.entities]
        return encoder.encode(expansions[question])

    embed_model = RagMultihopEmbedding(encoder=encoder)
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in corpus]
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    li, li_per_text = (
        LlamaIndexBridge(
            index.as_retriever(similarity_top_k=K), similarity_top_k=K, embed_model=embed_model
        )
        for _ in range(2)
    )
    li_per_text.core.searcher = NodeSearcher(index.as_retriever(similarity_top_k=K))

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    documents = [Document(id=p.id, content=p.text, meta={"title": p.title}) for p in corpus]
    vectors = encoder.encode([p.embedding_text for p in corpus])
    store.write_documents(
        [
            Document(id=d.id, content=d.content, meta=d.meta, embedding=v.tolist())
            for d, v in zip(documents, vectors, strict=True)
        ]
    )
    text_embedder = RagMultihopTextEmbedder()
    text_embedder._encoder = encoder  # one model in memory for every variant
    document_embedder = RagMultihopDocumentEmbedder()
    document_embedder._encoder = encoder

    def haystack(embedder: Any) -> Callable[[str], Any]:
        bridge = HaystackBridge(InMemoryEmbeddingRetriever(store), top_k=K, embedder=embedder)
        bridge.warm_up()
        return lambda question: bridge.run(query=question)

    return {
        "core": lambda question: core.run(Query(question), K),
        "batch": batch,
        "li": li.retrieve,
        "li-async": lambda question: asyncio.run(li.aretrieve(question)),
        "li-per-text": li_per_text.retrieve,
        "hs-text": haystack(text_embedder),
        "hs-document": haystack(document_embedder),
        "hs-plain-text": haystack(PlainTextEmbedder(encoder)),
    }


def measure(
    runs: dict[str, Callable[[str], Any]], questions: Sequence[str], rounds: int
) -> dict[str, float]:
    for run in runs.values():  # warm-up: models, memos, first-call costs
        run(questions[0])
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for question in questions:
            for name, run in runs.items():
                start = time.perf_counter()
                run(question)
                times[name].append(time.perf_counter() - start)
    return {name: 1000 * statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    corpus, questions = small_corpus()
    median = measure(variants(corpus, default_encoder()), questions, args.rounds)
    target = 2 * median["core"] + median["batch"]
    print(f"{len(corpus)} passages, {len(questions)} questions x {args.rounds} rounds, k={K}")
    print(f"{'variant':<15}{'ms/query':>10}{'x core':>8}  within target ({target:.0f} ms)")
    for name, ms in median.items():
        verdict = "" if name in ("core", "batch") else ("yes" if ms <= target else "no")
        print(f"{name:<15}{ms:>10.1f}{ms / median['core']:>8.2f}  {verdict}")


if __name__ == "__main__":
    main()
