"""The README's Haystack quickstart, tested end to end: a pipeline over a real Chroma server
(started by the ``chroma_server`` fixture) with the pipeline's own embedder, and each
rag-multihop component as a one-line change, in ``run`` and ``run_async``."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("haystack_integrations.document_stores.chroma")

from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY, documents_to_corpus
from haystack_integrations.components.embedders.rag_multihop import (
    RagMultihopDocumentEmbedder,
    RagMultihopTextEmbedder,
)
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.rankers.rag_multihop import AssociationRanker, RaLaRanker
from haystack_integrations.components.retrievers.chroma import ChromaEmbeddingRetriever
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    EntityGraphRetriever,
)
from haystack_integrations.document_stores.chroma import ChromaDocumentStore

from rag_multihop.association import AssociationReranker, TrainingConfig

PASSAGES = {
    "polish-wedding": (
        "Polish Wedding",
        "Polish Wedding is a 1998 film directed by Theresa Connelly.",
    ),
    "theresa-connelly": (
        "Theresa Connelly",
        "Theresa Connelly is a screenwriter born in Philadelphia.",
    ),
    "philadelphia": ("Philadelphia", "Philadelphia is a city in Pennsylvania."),
    "claire-danes": ("Claire Danes", "Claire Danes is an American actress."),
    "rope": ("Rope", "Rope is a 1948 film directed by Alfred Hitchcock."),
    "hitchcock": (
        "Alfred Hitchcock",
        "Alfred Hitchcock was an English film director born in London.",
    ),
}
QUESTION = "Where was the director of the film Polish Wedding born?"
SECOND_HOP = "theresa-connelly"


def documents() -> list[Document]:
    return [
        Document(id=pid, content=text, meta={"title": title})
        for pid, (title, text) in PASSAGES.items()
    ]


@pytest.fixture(scope="module")
def store(chroma_server):
    host, port = chroma_server
    # --8<-- [quickstart: index]
    store = ChromaDocumentStore(
        host=host, port=port, collection_name="quickstart", distance_function="cosine"
    )
    indexing = Pipeline()
    indexing.add_component("embedder", RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"]))
    indexing.add_component("writer", DocumentWriter(store))
    indexing.connect("embedder.documents", "writer.documents")
    indexing.run({"embedder": {"documents": documents()}})
    # --8<-- [end]
    return store


@pytest.fixture(scope="module")
def aar_model(tmp_path_factory) -> str:
    """An association model trained on the corpus (``rag-multihop aar train`` does this)."""
    encoder = RagMultihopTextEmbedder().encoder
    corpus = documents_to_corpus(documents())
    vectors = encoder.encode(corpus.texts())
    config = TrainingConfig(epochs=30, batch_size=4, seed=0)
    pairs = [("polish-wedding", SECOND_HOP), ("rope", "hitchcock")]
    model = AssociationReranker(encoder=encoder, training=config).fit(corpus.ids, vectors, pairs)
    return str(model.save(tmp_path_factory.mktemp("aar") / "model"))


def ids(out: dict, component: str) -> list[str]:
    return [d.id for d in out[component]["documents"]]


def test_aar_in_a_pipeline(store, aar_model):
    model_path, question = aar_model, QUESTION
    # --8<-- [quickstart: aar]
    text_embedder = RagMultihopTextEmbedder()  # or the pipeline's own text embedder
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", text_embedder)
    pipeline.add_component("retriever", ChromaEmbeddingRetriever(store, top_k=10))
    pipeline.add_component("ranker", AssociationRanker(model_path, top_k=3, embedder=text_embedder))
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    pipeline.connect("retriever.documents", "ranker.documents")
    out = pipeline.run({"text_embedder": {"text": question}, "ranker": {"query": question}})
    # --8<-- [end]
    found = ids(out, "ranker")
    assert SECOND_HOP in found and len(found) == 3
    inputs = {"text_embedder": {"text": QUESTION}, "ranker": {"query": QUESTION}}
    assert ids(asyncio.run(pipeline.run_async(inputs)), "ranker") == found
    signals = out["ranker"]["documents"][0].meta[SIGNALS_KEY]
    assert {"association", "cosine", "retrieval_score"} <= set(signals)


def test_graph_fusion_in_a_pipeline(store):
    question = QUESTION
    # --8<-- [quickstart: fusion]
    text_embedder = RagMultihopTextEmbedder()
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", text_embedder)
    pipeline.add_component("dense", ChromaEmbeddingRetriever(store, top_k=10))
    pipeline.add_component("graph", EntityGraphRetriever(store, top_k=10))
    pipeline.add_component("joiner", PITDocumentJoiner(top_k=3))  # where a DocumentJoiner was
    pipeline.connect("text_embedder.embedding", "dense.query_embedding")
    pipeline.connect("dense.documents", "graph.documents")  # the dense top hits seed the walk
    pipeline.connect("dense.documents", "joiner.documents")
    pipeline.connect("graph.documents", "joiner.documents")
    out = pipeline.run({"text_embedder": {"text": question}, "graph": {"query": question}})
    # --8<-- [end]
    found = ids(out, "joiner")
    assert found[0] == "polish-wedding" and SECOND_HOP in found
    inputs = {"text_embedder": {"text": QUESTION}, "graph": {"query": QUESTION}}
    assert ids(asyncio.run(pipeline.run_async(inputs)), "joiner") == found


def test_bridge_in_a_pipeline(store):
    question = QUESTION
    # --8<-- [quickstart: bridge]
    text_embedder = RagMultihopTextEmbedder()
    pipeline = Pipeline()
    retriever = ChromaEmbeddingRetriever(store, top_k=10)
    pipeline.add_component("bridge", BridgeRetriever(retriever, top_k=3, embedder=text_embedder))
    out = pipeline.run({"bridge": {"query": question}})
    # --8<-- [end]
    found = ids(out, "bridge")
    assert found[:2] == ["polish-wedding", SECOND_HOP]
    assert ids(asyncio.run(pipeline.run_async({"bridge": {"query": QUESTION}})), "bridge") == found


def test_rala_in_a_pipeline(store):
    question = QUESTION
    # --8<-- [quickstart: rala]
    # CoopRAG's RaLa (late interaction over encoder layers, LLM-free) reranks the top 10
    pipeline = Pipeline()
    pipeline.add_component("text_embedder", RagMultihopTextEmbedder())
    pipeline.add_component("retriever", ChromaEmbeddingRetriever(store, top_k=10))
    pipeline.add_component("ranker", RaLaRanker(top_k=3))  # the one new component
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    pipeline.connect("retriever.documents", "ranker.documents")
    out = pipeline.run({"text_embedder": {"text": question}, "ranker": {"query": question}})
    # --8<-- [end]
    found = ids(out, "ranker")
    assert found[0] == "polish-wedding" and len(found) == 3
    inputs = {"text_embedder": {"text": QUESTION}, "ranker": {"query": QUESTION}}
    assert ids(asyncio.run(pipeline.run_async(inputs)), "ranker") == found


def test_the_corpus_index_takes_its_candidates_from_chroma(chroma_server, tmp_path):
    """The embedding retriever's documents are the multi-hop first stage: the same ranking as
    the index's own search, and a document only the store has is skipped and counted."""
    from haystack_integrations.components.retrievers.rag_multihop import (
        CorpusIndexMultiHopRetriever,
    )
    from haystack_integrations.components.writers.rag_multihop import CorpusIndexWriter

    host, port = chroma_server
    chroma = ChromaDocumentStore(
        host=host, port=port, collection_name="first_stage", distance_function="cosine"
    )
    path = str(tmp_path / "corpus.idx")
    indexing = Pipeline()
    indexing.add_component("embedder", RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"]))
    indexing.add_component("writer", DocumentWriter(chroma))
    indexing.add_component("index_writer", CorpusIndexWriter(path))
    indexing.connect("embedder.documents", "writer.documents")
    indexing.connect("embedder.documents", "index_writer.documents")
    indexing.run({"embedder": {"documents": documents()}})
    late = Document(id="late", content="Theresa Connelly wrote a novel.", meta={"title": "Late"})
    chroma.write_documents(RagMultihopDocumentEmbedder().run([late])["documents"])

    pipeline = Pipeline()
    pipeline.add_component("text_embedder", RagMultihopTextEmbedder())
    pipeline.add_component("retriever", ChromaEmbeddingRetriever(chroma, top_k=50))
    pipeline.add_component("multihop", CorpusIndexMultiHopRetriever(path, top_k=4))
    pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
    pipeline.connect("text_embedder.embedding", "multihop.query_embedding")
    pipeline.connect("retriever.documents", "multihop.documents")
    out = pipeline.run({"text_embedder": {"text": QUESTION}, "multihop": {"query": QUESTION}})
    found = out["multihop"]
    assert found["trace"]["stale_candidates"] == 1
    embedding = RagMultihopTextEmbedder().run(QUESTION)["embedding"]
    own = CorpusIndexMultiHopRetriever(path, top_k=4).run(QUESTION, embedding)
    assert [d.id for d in found["documents"]] == [d.id for d in own["documents"]]
    assert [d.id for d in found["documents"]][:2] == ["polish-wedding", SECOND_HOP]
    assert own["trace"]["stale_candidates"] == 0
