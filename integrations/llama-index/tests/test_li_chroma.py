"""The README's LlamaIndex quickstart, tested end to end: a chat engine over a real Chroma
server (started by the ``chroma_server`` fixture), the app's own embedder in ``Settings``, and
each rag-multihop component as a one-line change, in sync and async."""

from __future__ import annotations

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("llama_index.vector_stores.chroma")

import chromadb
from llama_index.core import Settings, StorageContext, VectorStoreIndex
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import AssociationRerank, RaLaRerank
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    BridgeRetriever,
    EntityGraphRetriever,
    PITFusionRetriever,
    nodes_to_corpus,
)
from llama_index.vector_stores.chroma import ChromaVectorStore

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


@pytest.fixture(scope="module")
def nodes() -> list[TextNode]:
    return [
        TextNode(id_=pid, text=text, metadata={"title": title})
        for pid, (title, text) in PASSAGES.items()
    ]


@pytest.fixture(scope="module")
def index(chroma_server, nodes):
    host, port = chroma_server
    before = Settings._embed_model
    # --8<-- [quickstart: index]
    Settings.embed_model = RagMultihopEmbedding()  # or the app's own embed model
    client = chromadb.HttpClient(host=host, port=port)
    collection = client.get_or_create_collection("quickstart", metadata={"hnsw:space": "cosine"})
    vector_store = ChromaVectorStore(chroma_collection=collection)
    storage_context = StorageContext.from_defaults(vector_store=vector_store)
    index = VectorStoreIndex(nodes, storage_context=storage_context)
    # --8<-- [end]
    yield index
    Settings._embed_model = before


@pytest.fixture(scope="module")
def aar_model(tmp_path_factory, nodes, index) -> str:
    """An association model trained on the corpus (``rag-multihop aar train`` does this)."""
    corpus = nodes_to_corpus(nodes)
    encoder = Settings.embed_model.encoder  # set by the index fixture (RagMultihopEmbedding)
    vectors = encoder.encode(corpus.texts())
    config = TrainingConfig(epochs=30, batch_size=4, seed=0)
    pairs = [("polish-wedding", SECOND_HOP), ("rope", "hitchcock")]
    model = AssociationReranker(encoder=encoder, training=config).fit(corpus.ids, vectors, pairs)
    return str(model.save(tmp_path_factory.mktemp("aar") / "model"))


def chat_sources(engine) -> list[str]:
    engine.reset()  # a fresh conversation: no condensing of the question
    return [n.node.node_id for n in engine.chat(QUESTION).source_nodes]


async def achat_sources(engine) -> list[str]:
    engine.reset()
    return [n.node.node_id for n in (await engine.achat(QUESTION)).source_nodes]


@pytest.mark.anyio
async def test_aar_in_a_chat_engine(index, aar_model):
    model_path, llm = aar_model, MockLLM()
    # --8<-- [quickstart: aar]
    retriever = index.as_retriever(similarity_top_k=10)
    rerank = AssociationRerank(model_path=model_path, top_n=3)  # the one new line
    chat_engine = CondensePlusContextChatEngine.from_defaults(
        retriever, llm=llm, node_postprocessors=[rerank]
    )
    # --8<-- [end]
    found = chat_sources(chat_engine)
    assert SECOND_HOP in found and len(found) == 3
    assert await achat_sources(chat_engine) == found
    chat_engine.reset()
    (first,) = chat_engine.chat(QUESTION).source_nodes[:1]
    assert {"association", "cosine", "retrieval_score"} <= set(first.node.metadata[SIGNALS_KEY])


@pytest.mark.anyio
async def test_graph_fusion_in_a_chat_engine(index, nodes):
    llm = MockLLM()
    # --8<-- [quickstart: fusion]
    vector = index.as_retriever(similarity_top_k=10)
    graph = EntityGraphRetriever.from_nodes(nodes, seed_retriever=vector, similarity_top_k=10)
    retriever = PITFusionRetriever([vector, graph], similarity_top_k=3)  # the one new line
    chat_engine = CondensePlusContextChatEngine.from_defaults(retriever, llm=llm)
    # --8<-- [end]
    found = chat_sources(chat_engine)
    assert found[0] == "polish-wedding" and SECOND_HOP in found
    assert await achat_sources(chat_engine) == found


@pytest.mark.anyio
async def test_bridge_in_a_chat_engine(index):
    llm = MockLLM()
    # --8<-- [quickstart: bridge]
    retriever = BridgeRetriever(index.as_retriever(similarity_top_k=10), similarity_top_k=3)
    chat_engine = CondensePlusContextChatEngine.from_defaults(retriever, llm=llm)
    # --8<-- [end]
    found = chat_sources(chat_engine)
    assert found[:2] == ["polish-wedding", SECOND_HOP]
    assert await achat_sources(chat_engine) == found


@pytest.mark.anyio
async def test_rala_in_a_chat_engine(index):
    llm = MockLLM()
    # --8<-- [quickstart: rala]
    # CoopRAG's RaLa (late interaction over encoder layers, LLM-free) reranks the top 10
    retriever = index.as_retriever(similarity_top_k=10)
    rerank = RaLaRerank(top_n=3)  # the one new line
    chat_engine = CondensePlusContextChatEngine.from_defaults(
        retriever, llm=llm, node_postprocessors=[rerank]
    )
    # --8<-- [end]
    found = chat_sources(chat_engine)
    assert found[0] == "polish-wedding" and len(found) == 3
    assert await achat_sources(chat_engine) == found


def test_the_corpus_index_takes_its_candidates_from_chroma(chroma_server, nodes, tmp_path):
    """``vector_store=`` the user's VectorStoreIndex over Chroma: the same ranking as the
    index's own search; a node only Chroma holds is skipped and counted."""
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.retrievers.rag_multihop import (
        CorpusIndexMultiHopRetriever,
        CorpusIndexWriter,
    )

    host, port = chroma_server
    embed_model = RagMultihopEmbedding()
    path = str(tmp_path / "corpus.idx")
    pipeline = IngestionPipeline(transformations=[embed_model, CorpusIndexWriter(index_path=path)])
    embedded = pipeline.run(nodes=[n.model_copy() for n in nodes])
    collection = chromadb.HttpClient(host=host, port=port).get_or_create_collection(
        "first_stage", metadata={"hnsw:space": "cosine"}
    )
    storage = StorageContext.from_defaults(
        vector_store=ChromaVectorStore(chroma_collection=collection)
    )
    index = VectorStoreIndex(embedded, storage_context=storage, embed_model=embed_model)
    index.insert_nodes([TextNode(id_="late", text="Theresa Connelly wrote a novel.")])

    from_chroma = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=4, embed_model=embed_model, vector_store=index
    )
    own = CorpusIndexMultiHopRetriever(path, similarity_top_k=4, embed_model=embed_model)
    found = [n.node.node_id for n in from_chroma.retrieve(QUESTION)]
    assert found == [n.node.node_id for n in own.retrieve(QUESTION)]
    assert found[:2] == ["polish-wedding", SECOND_HOP]
    assert from_chroma.last_trace.stale_candidates == 1
    assert own.last_trace.stale_candidates == 0
    with pytest.raises(TypeError, match="vector_store must be a VectorStoreIndex"):
        CorpusIndexMultiHopRetriever(path, embed_model=embed_model, vector_store="chroma")
