"""CoopRAG's LlamaIndex adapters: the RaLa postprocessor, the unrolling query transform (into
``custom_embedding_strs``), the retriever around a real VectorStoreIndex retriever, and the
query engine; translation only, nodes never mutated, sync = async."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.postprocessor.rag_multihop import RaLaRerank
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    CoopQueryEngine,
    CoopRetriever,
    UnrollingQueryTransform,
)

from rag_multihop.coop import RaLaSettings
from rag_multihop.llm import LLMClient, LLMSettings, RawReply
from rag_multihop.testing import (
    POLISH_WEDDING_CHAIN,
    POLISH_WEDDING_QUESTION,
    POLISH_WEDDING_UNROLLING,
    FakeTransport,
    polish_wedding_passages,
    polish_wedding_replies,
)

PASSAGES = polish_wedding_passages()
QUESTION = POLISH_WEDDING_QUESTION


def fake_llm() -> FakeTransport:
    """Scripted CoopRAG replies by prompt kind (stands in for litellm's transport)."""
    return FakeTransport(
        polish_wedding_replies(
            unroll=RawReply(
                json.dumps(POLISH_WEDDING_UNROLLING), prompt_tokens=80, completion_tokens=40
            ),
            complete=RawReply(
                json.dumps(POLISH_WEDDING_CHAIN), prompt_tokens=200, completion_tokens=40
            ),
            key=RawReply('{"answerable": true, "key_sentence": ""}', prompt_tokens=150),
        ),
        default=RawReply('{"answer": "Philadelphia"}', prompt_tokens=200, completion_tokens=5),
    )


def client(fake: FakeTransport | None = None) -> LLMClient:
    return LLMClient(LLMSettings("openai/gpt-4o-mini"), transport=fake or fake_llm())


def text_nodes() -> list[TextNode]:
    return [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in PASSAGES]


@pytest.fixture
def base():
    index = VectorStoreIndex(text_nodes(), embed_model=HashingEmbedding())
    return index.as_retriever(similarity_top_k=10)


def scored_nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=n, score=1.0 - 0.1 * i) for i, n in enumerate(text_nodes()[::-1])]


def test_rala_postprocessor_reranks_copies_and_keeps_the_core_settings() -> None:
    rerank = RaLaRerank(top_n=3)
    nodes = scored_nodes()
    before = [(n.score, dict(n.node.metadata)) for n in nodes]
    out = rerank.postprocess_nodes(nodes, query_str=QUESTION)
    assert out[0].node.node_id == "polish-wedding" and len(out) == 3
    assert {"rala", "maxsim"} <= set(out[0].node.metadata[SIGNALS_KEY])
    assert out[0].score == pytest.approx(out[0].node.metadata[SIGNALS_KEY]["rala"])
    assert [(n.score, dict(n.node.metadata)) for n in nodes] == before
    async_ = asyncio.run(rerank.apostprocess_nodes(nodes, query_str=QUESTION))
    assert [n.node.node_id for n in async_] == [n.node.node_id for n in out]
    assert rerank.postprocess_nodes([], query_str=QUESTION) == []
    assert rerank.to_dict()["scoring"] == RaLaSettings().scoring
    with pytest.raises(ValueError, match="Missing query bundle"):
        rerank.postprocess_nodes(nodes)
    with pytest.raises(ValueError, match="scoring must be one of"):
        RaLaRerank(scoring="eq5")


def test_unrolling_fills_custom_embedding_strs_and_keeps_the_question() -> None:
    fake = fake_llm()
    transform = UnrollingQueryTransform(client(fake))
    bundle = transform(QUESTION)
    assert bundle.query_str == QUESTION
    assert bundle.custom_embedding_strs == [
        f"{QUESTION} Who directed Polish Wedding? Where was that director born? "
        "Polish Wedding directed by. born in."
    ]
    assert transform.last_unrolling is not None and transform.last_unrolling.masked == 2
    assert len(fake.prompts()) == 1


def test_coop_retriever_llm_free_and_with_an_llm(base) -> None:
    free = CoopRetriever(base, similarity_top_k=3)
    found = free.retrieve(QUESTION)
    assert found[0].node.node_id == "polish-wedding" and len(found) == 3
    assert "rala" in found[0].node.metadata[SIGNALS_KEY]
    assert free.last_trace is not None and free.last_trace.account is None
    assert all(SIGNALS_KEY not in n.node.metadata for n in base.retrieve(QUESTION))

    fake = fake_llm()
    coop = CoopRetriever(base, llm=client(fake), similarity_top_k=3, keyextract_rounds=1)
    nodes = coop.retrieve(QUESTION)
    trace = coop.last_trace
    assert trace is not None and trace.stop == "answerable"
    assert trace.search_texts[0].startswith(QUESTION + " Who directed Polish Wedding?")
    assert trace.account is not None and trace.account.calls == 2  # unroll + one KeyExtract
    async_ = asyncio.run(coop.aretrieve(QueryBundle(QUESTION)))
    assert [n.node.node_id for n in async_] == [n.node.node_id for n in nodes]
    with pytest.raises(ValueError, match="apply to a model-string llm"):
        CoopRetriever(base, llm=client(), api_key_env="OPENAI_API_KEY")


def test_query_engine_answers_with_the_completed_chain(base) -> None:
    engine = CoopQueryEngine(retriever=CoopRetriever(base, llm=client(), similarity_top_k=3))
    response = engine.query(QUESTION)
    assert str(response) == "Philadelphia"
    assert response.metadata["chain"][1] == ["Theresa Connelly", "born in", "Philadelphia"]
    assert response.metadata["unsupported_spans"] == []
    assert response.metadata["trace"]["accounts"]["answer"]["calls"] == 1
    assert response.source_nodes[0].node.node_id == "polish-wedding"
    async_ = asyncio.run(engine.aquery(QUESTION))
    assert str(async_) == "Philadelphia"
    with pytest.raises(ValueError, match="needs a CoopRetriever built with an llm"):
        CoopQueryEngine(retriever=CoopRetriever(base))


def test_rala_postprocessor_reads_the_token_states_of_a_corpus_index(tmp_path) -> None:
    from rag_multihop.coop import RaLaReranker
    from rag_multihop.coop.indexed import RaLaSidecar
    from rag_multihop.store import CorpusIndex
    from rag_multihop.testing import HashingEncoder

    given = [
        NodeWithScore(node=TextNode(id_=p.id, text=p.text, metadata={"title": p.title}), score=0.1)
        for p in PASSAGES
    ]
    plain_rerank = RaLaRerank(top_n=3)
    expected = plain_rerank.postprocess_nodes(given, query_str=QUESTION)
    index = CorpusIndex.build(
        tmp_path / "idx", PASSAGES, HashingEncoder().encode([p.embedding_text for p in PASSAGES])
    )
    index.attach_sidecar(RaLaSidecar(RaLaReranker(plain_rerank.reranker().encoder)))
    rerank = RaLaRerank(top_n=3, index_path=str(tmp_path / "idx"))
    found = rerank.postprocess_nodes(given, query_str=QUESTION)
    assert [n.node.node_id for n in found] == [n.node.node_id for n in expected]
    assert [n.score for n in found] == pytest.approx([n.score for n in expected], abs=1e-3)
    assert rerank.reranker().encoded_at_query_time == 0  # every node's states were stored
