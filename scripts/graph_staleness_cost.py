"""What Haystack ``EntityGraphRetriever``'s staleness check costs per run on ~6,000 documents.

Loads the 2WikiMultihopQA corpus of the shared datasets (6,119 passages) into an
``InMemoryDocumentStore``, builds the entity graph once, and times per query:

- ``count``: ``auto_refresh=False``, the document count compared only;
- ``content``: ``auto_refresh=True``, which on an equal count also reads the store's
  documents and compares their ids, content and meta with the graph's;
- ``check``: that second check alone (``filter_documents()`` + ``changed_document``).

Both stores are measured: ``return_embedding=True`` (the default: the stored documents come
back, so no text is compared) and ``False`` (Haystack copies every document on each read).
Rounds interleave the variants (load on a shared machine hits all alike); it prints medians.
Run from the repository root::

    python scripts/graph_staleness_cost.py --rounds 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.common.rag_multihop.convert import (
    changed_document,
    documents_to_corpus,
)
from haystack_integrations.components.retrievers.rag_multihop import EntityGraphRetriever

from rag_multihop.corpus import Corpus

CORPUS = Path(__file__).resolve().parents[1] / "../shared/datasets/2wikimultihopqa/corpus.json.gz"
QUERIES = [
    "Who was the husband of Teutberga?",
    "Who was the mother of Helen of Greece and Denmark?",
    "Which country is Lotharingia in?",
]


def _documents(path: Path) -> list[Document]:
    with gzip.open(path) as stream:
        rows = json.loads(stream.read())
    return [
        Document(id=f"p{i}", content=row["text"], meta={"title": row["title"]})
        for i, row in enumerate(rows)
    ]


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _per_query(retriever: EntityGraphRetriever) -> Callable[[], object]:
    return lambda: [retriever.run(query=q) for q in QUERIES]


def _check_alone(corpus: Corpus, store: InMemoryDocumentStore) -> Callable[[], object]:
    return lambda: [changed_document(corpus, store.filter_documents()) for _ in QUERIES]


def measure(documents: list[Document], return_embedding: bool, rounds: int, repeat: int) -> str:
    """One line: the median milliseconds per query of each variant (module docstring)."""
    store = InMemoryDocumentStore(return_embedding=return_embedding)
    store.write_documents(documents)
    with tempfile.TemporaryDirectory() as folder:
        checked = EntityGraphRetriever(store, auto_refresh=True, graph_path=folder)
        start = time.perf_counter()
        checked.warm_up()
        built = time.perf_counter() - start
        counted = EntityGraphRetriever(store, auto_refresh=False, graph_path=folder)
        counted.warm_up()  # loads the saved graph
    variants = {
        "count": _per_query(counted),
        "content": _per_query(checked),
        "check": _check_alone(documents_to_corpus(store.filter_documents()), store),
    }
    results: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            results[name].append(_median_ms(fn, repeat) / len(QUERIES))
    ms = {name: statistics.median(values) for name, values in results.items()}
    return (
        f"{len(documents)} documents, return_embedding={return_embedding} "
        f"(graph built in {built:.1f} s): run {ms['count']:.2f} ms (count only), "
        f"{ms['content']:.2f} ms (count + content), check alone {ms['check']:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20, help="runs per variant and round")
    args = parser.parse_args()
    documents = _documents(args.corpus)
    for return_embedding in (True, False):
        print(measure(documents, return_embedding, args.rounds, args.repeat))


if __name__ == "__main__":
    main()
