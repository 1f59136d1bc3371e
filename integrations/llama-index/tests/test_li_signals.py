"""Every component of this package writes under ``metadata["rag_multihop_signals"]`` only the
signal names the core methods declare (``SIGNALS`` of each method package), on the bundled
demo corpus."""

from __future__ import annotations

import pytest
from li_fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.postprocessor.rag_multihop import (
    AssociationRerank,
    BridgeJudgeRerank,
    RaLaRerank,
)
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    BridgeRetriever,
    CoopRetriever,
    EntityGraphRetriever,
    MultiHopRetriever,
    PITFusionRetriever,
)

from rag_multihop import association, bridge, coop, fusion, graph, index, multihop
from rag_multihop.demo import load_demo_dataset
from rag_multihop.signals import check_signals
from rag_multihop.testing import HashingEncoder

DEMO = load_demo_dataset()
TEXTS = {p.id: (p.title, p.text) for p in DEMO.corpus}
QUESTION = DEMO.questions[0].question


def signals(found: list[NodeWithScore]) -> list[dict[str, float]]:
    assert found, "no nodes"
    return [dict(n.node.metadata[SIGNALS_KEY]) for n in found]


@pytest.fixture(scope="module")
def nodes() -> list[TextNode]:
    embed = HashingEmbedding()
    return [
        TextNode(
            id_=pid,
            text=text,
            metadata={"title": title},
            embedding=embed.get_text_embedding(f"{title}\n{text}"),
        )
        for pid, (title, text) in TEXTS.items()
    ]


@pytest.fixture(scope="module")
def vector(nodes):
    return VectorStoreIndex(nodes, embed_model=HashingEmbedding()).as_retriever(similarity_top_k=5)


def test_retrievers(nodes, vector) -> None:
    walk = EntityGraphRetriever.from_nodes(nodes, seed_retriever=vector, similarity_top_k=5)
    check_signals(signals(walk.retrieve(QUESTION)), graph.SIGNALS)
    fused = PITFusionRetriever([vector, walk], similarity_top_k=5, names=["dense", "graph"])
    check_signals(
        signals(fused.retrieve(QUESTION)), fusion.SIGNALS, graph.SIGNALS, systems={"dense", "graph"}
    )
    hop = BridgeRetriever(vector, similarity_top_k=5, embed_model=HashingEmbedding())
    found = signals(hop.retrieve(QUESTION))
    assert any("judge" in s for s in found)
    check_signals(found, bridge.SIGNALS)
    pair = MultiHopRetriever(nodes, similarity_top_k=5, embed_model=HashingEmbedding())
    check_signals(signals(pair.retrieve(QUESTION)), multihop.SIGNALS)


def test_rerankers_and_coop(nodes, vector, tmp_path) -> None:
    bundle = QueryBundle(QUESTION)
    first = vector.retrieve(bundle)
    encoder = HashingEncoder()
    ids = [n.node_id for n in nodes]
    vectors = encoder.encode([f"{t}\n{x}" for t, x in TEXTS.values()])
    model = association.AssociationReranker(
        encoder=encoder, training=association.TrainingConfig(epochs=2, batch_size=2, seed=0)
    ).fit(ids, vectors, [DEMO.questions[0].gold_ids])
    aar = AssociationRerank(
        model_path=str(model.save(tmp_path / "aar")), top_n=3, embed_model=HashingEmbedding()
    )
    found = signals(aar.postprocess_nodes(first, bundle))
    assert {"association", "cosine", "retrieval_score"} <= set(found[0])
    check_signals(found, association.SIGNALS)
    judge = BridgeJudgeRerank(top_n=3, embed_model=HashingEmbedding())
    check_signals(signals(judge.postprocess_nodes(first, bundle)), bridge.SIGNALS)
    rala = RaLaRerank(top_n=3, scoring="gap-weighted")
    check_signals(signals(rala.postprocess_nodes(first, bundle)), coop.SIGNALS)
    unrolled = CoopRetriever(vector, similarity_top_k=3, candidates=5)
    check_signals(signals(unrolled.retrieve(QUESTION)), coop.SIGNALS, index.SIGNALS)


@pytest.mark.parametrize("value", ["high", None, float("nan"), True])
def test_a_signal_that_is_no_number_is_named_with_its_node(value) -> None:
    node = TextNode(id_="x", text="Rope is a film.", metadata={SIGNALS_KEY: {"dense": value}})
    found = [NodeWithScore(node=node, score=0.5)]
    rerank = BridgeJudgeRerank(top_n=1, embed_model=HashingEmbedding())
    with pytest.raises(
        ValueError, match=r"node 'x': metadata\['rag_multihop_signals'\]\['dense'\]"
    ):
        rerank.postprocess_nodes(found, query_str="Who made Rope?")
