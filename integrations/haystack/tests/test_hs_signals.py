"""Every component of this package writes under ``meta["rag_multihop_signals"]`` only the
signal names the core methods declare (``SIGNALS`` of each method package), on the bundled
demo corpus."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.rankers.rag_multihop import (
    AssociationRanker,
    BridgeJudgeRanker,
    RaLaRanker,
)
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    CoopRetriever,
    EntityGraphRetriever,
    MultiHopRetriever,
)
from hs_fakes import HashingTextEmbedder

from rag_multihop import association, bridge, coop, fusion, graph, multihop
from rag_multihop.demo import load_demo_dataset
from rag_multihop.signals import check_signals
from rag_multihop.testing import HashingEncoder, hashing_vectors

DEMO = load_demo_dataset()
TEXTS = {p.id: (p.title, p.text) for p in DEMO.corpus}
QUESTION = DEMO.questions[0].question


def signals(documents: list[Document]) -> list[dict[str, float]]:
    assert documents, "no documents"
    return [dict(d.meta[SIGNALS_KEY]) for d in documents]


@pytest.fixture(scope="module")
def store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(
        [
            Document(
                id=pid,
                content=text,
                meta={"title": title},
                embedding=hashing_vectors([f"{title}\n{text}"])[0].tolist(),
            )
            for pid, (title, text) in TEXTS.items()
        ]
    )
    return store


@pytest.fixture(scope="module")
def dense(store) -> list[Document]:
    vector = hashing_vectors([QUESTION])[0].tolist()
    return InMemoryEmbeddingRetriever(store).run(query_embedding=vector, top_k=5)["documents"]


def test_retrievers_and_joiner(store, dense) -> None:
    walked = EntityGraphRetriever(store, top_k=5).run(query=QUESTION, documents=dense)
    check_signals(signals(walked["documents"]), graph.SIGNALS)
    joined = PITDocumentJoiner(top_k=5, names=["dense", "graph"]).run(
        documents=[dense, walked["documents"]]
    )
    check_signals(
        signals(joined["documents"]), fusion.SIGNALS, graph.SIGNALS, systems={"dense", "graph"}
    )
    retriever = InMemoryEmbeddingRetriever(store)
    hop = BridgeRetriever(retriever, top_k=5, embedder=HashingTextEmbedder())
    found = signals(hop.run(query=QUESTION)["documents"])
    assert any("judge" in s for s in found)
    check_signals(found, bridge.SIGNALS)
    pair = MultiHopRetriever(store, top_k=5, embedder=HashingTextEmbedder())
    check_signals(signals(pair.run(query=QUESTION)["documents"]), multihop.SIGNALS)


def test_rankers_and_coop(store, dense, tmp_path) -> None:
    encoder = HashingEncoder()
    vectors = encoder.encode([f"{t}\n{x}" for t, x in TEXTS.values()])
    model = association.AssociationReranker(
        encoder=encoder, training=association.TrainingConfig(epochs=2, batch_size=2, seed=0)
    ).fit(list(TEXTS), vectors, [DEMO.questions[0].gold_ids])
    aar = AssociationRanker(
        str(model.save(tmp_path / "aar")), top_k=3, embedder=HashingTextEmbedder()
    )
    found = signals(aar.run(query=QUESTION, documents=dense)["documents"])
    assert {"association", "cosine", "retrieval_score"} <= set(found[0])
    check_signals(found, association.SIGNALS)
    judge = BridgeJudgeRanker(top_k=3, embedder=HashingTextEmbedder())
    check_signals(signals(judge.run(query=QUESTION, documents=dense)["documents"]), bridge.SIGNALS)
    rala = RaLaRanker(top_k=3, scoring="gap-weighted")
    check_signals(signals(rala.run(query=QUESTION, documents=dense)["documents"]), coop.SIGNALS)
    unrolled = CoopRetriever(
        InMemoryEmbeddingRetriever(store), top_k=3, candidates=5, embedder=HashingTextEmbedder()
    )
    check_signals(signals(unrolled.run(query=QUESTION)["documents"]), coop.SIGNALS)


@pytest.mark.parametrize("value", ["high", None])
def test_a_signal_that_is_no_number_names_the_document_the_signal_and_the_value(
    store, dense, value
) -> None:
    bad = [Document(id="x", content="X.", meta={SIGNALS_KEY: {"y": value}}, score=0.5)]
    message = (
        rf"document 'x': meta\['rag_multihop_signals'\]\['y'\] must be a number, got {value!r}"
    )
    with pytest.raises(ValueError, match=message):
        PITDocumentJoiner().run(documents=[dense, bad])
    with pytest.raises(ValueError, match=message):
        BridgeJudgeRanker(embedder=HashingTextEmbedder()).run(query=QUESTION, documents=bad)
    seed = [Document(id=dense[0].id, content="", meta={SIGNALS_KEY: {"y": value}}, score=0.5)]
    with pytest.raises(ValueError, match=message.replace("'x'", repr(seed[0].id))):
        EntityGraphRetriever(store).run(query=QUESTION, documents=seed)
