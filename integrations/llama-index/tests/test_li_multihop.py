"""``MultiHopRetriever`` over LlamaIndex nodes: the core's ranking, copies with signals, the
node embeddings or an embed model, settings, async, and bad input."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.schema import QueryBundle, TextNode
from llama_index.retrievers.rag_multihop import SIGNALS_KEY, MultiHopRetriever
from llama_index.retrievers.rag_multihop._convert import nodes_to_corpus

from rag_multihop import Query
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings

TEXTS = [
    ("pw", "Polish Wedding", "Polish Wedding is a 1998 film directed by Theresa Connelly."),
    ("tc", "Theresa Connelly", "Theresa Connelly is an American director born in Philadelphia."),
    ("ph", "Philadelphia", "Philadelphia is a city in Pennsylvania."),
    ("rope", "Rope", "Rope is a 1948 film directed by Alfred Hitchcock."),
    ("ah", "Alfred Hitchcock", "Alfred Hitchcock was an English director born in London."),
]
QUESTION = "Where was the director of the film Polish Wedding born?"


def _nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=text, metadata={"title": title}) for i, title, text in TEXTS]


def test_the_ranking_is_the_cores_and_nodes_are_copies(hashing_embedding, hashing_encoder):
    nodes = _nodes()
    retriever = MultiHopRetriever(nodes, similarity_top_k=3, embed_model=hashing_embedding)
    found = retriever.retrieve(QUESTION)
    corpus = nodes_to_corpus(nodes)
    core = CoreMultiHopRetriever.from_corpus(corpus, hashing_encoder)
    expected = core.retrieve(Query(QUESTION), k=3)
    assert [n.node.node_id for n in found] == [c.id for c in expected]
    assert [n.node.node_id for n in found][:2] == ["pw", "tc"]
    assert found[0].score == pytest.approx(expected[0].score)
    assert found[0].node.metadata[SIGNALS_KEY]["named"] == 1.0
    assert SIGNALS_KEY not in nodes[0].metadata  # the given nodes are not mutated
    assert SIGNALS_KEY in found[0].node.excluded_llm_metadata_keys


def test_node_embeddings_are_used_as_they_are(hashing_embedding):
    from rag_multihop.testing import hashing_vectors

    nodes = _nodes()
    vectors = hashing_vectors([f"{t}\n{x}" for _, t, x in TEXTS])
    embedded = [
        n.model_copy(update={"embedding": v.tolist()}) for n, v in zip(nodes, vectors, strict=True)
    ]
    with_model = MultiHopRetriever(_nodes(), embed_model=hashing_embedding)
    given = MultiHopRetriever(embedded, embed_model=hashing_embedding)
    assert [n.node.node_id for n in given.retrieve(QUESTION)] == [
        n.node.node_id for n in with_model.retrieve(QUESTION)
    ]


def test_a_query_bundle_embedding_needs_no_embed_model(monkeypatch):
    from llama_index.retrievers.rag_multihop import multihop

    monkeypatch.setattr(multihop, "settings_embed_model", lambda: None)
    nodes = [
        n.model_copy(update={"embedding": [1.0, float(i), 0.0]}) for i, n in enumerate(_nodes())
    ]
    retriever = MultiHopRetriever(nodes, similarity_top_k=2)
    found = retriever.retrieve(QueryBundle(QUESTION, embedding=[1.0, 0.0, 0.0]))
    assert len(found) == 2
    with pytest.raises(ValueError, match="no embedding and no embed model is set"):
        retriever.retrieve(QUESTION)


def test_settings_and_typed_overrides_reach_the_core(hashing_embedding):
    retriever = MultiHopRetriever(
        _nodes(),
        embed_model=hashing_embedding,
        settings=MultiHopSettings(first_hops=3),
        graph_tail=False,
    )
    assert retriever.settings.first_hops == 3 and retriever.settings.graph_tail is False
    with pytest.raises(ValueError, match="first_hops must be a positive integer, got 0"):
        MultiHopRetriever(_nodes(), embed_model=hashing_embedding, first_hops=0)
    with pytest.raises(ValueError, match="similarity_top_k must be a positive integer"):
        MultiHopRetriever(_nodes(), similarity_top_k=0, embed_model=hashing_embedding)


@pytest.mark.anyio
async def test_async_gives_the_sync_ranking(hashing_embedding):
    retriever = MultiHopRetriever(_nodes(), similarity_top_k=4, embed_model=hashing_embedding)
    found = await retriever.aretrieve(QUESTION)
    assert [n.node.node_id for n in found] == [n.node.node_id for n in retriever.retrieve(QUESTION)]


def test_duplicate_node_ids_are_refused(hashing_embedding):
    with pytest.raises(ValueError, match="duplicate passage id"):
        MultiHopRetriever([*_nodes(), _nodes()[0]], embed_model=hashing_embedding)


def _filters(key: str, value: object, operator: str = "==") -> object:
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    return MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=operator)])


def test_filters_restrict_every_step_to_the_matching_nodes(hashing_embedding):
    not_the_director = _filters("title", "Theresa Connelly", "!=")
    retriever = MultiHopRetriever(
        _nodes(), similarity_top_k=5, embed_model=hashing_embedding, filters=not_the_director
    )
    ids = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    assert ids[0] == "pw" and "tc" not in ids and len(ids) == 4


@pytest.mark.anyio
async def test_a_filter_that_excludes_every_node_returns_none(hashing_embedding):
    nothing = _filters("title", "no such title")
    retriever = MultiHopRetriever(_nodes(), embed_model=hashing_embedding, filters=nothing)
    assert retriever.retrieve(QUESTION) == []
    assert await retriever.aretrieve(QUESTION) == []


def test_malformed_filters_are_refused_with_the_reason(hashing_embedding):
    with pytest.raises(TypeError, match="filters must be LlamaIndex MetadataFilters.*got dict"):
        MultiHopRetriever(_nodes(), embed_model=hashing_embedding, filters={"title": "Rope"})
    with pytest.raises(ValueError, match="operator 'text_match' needs a string value, got 3"):
        MultiHopRetriever(
            _nodes(), embed_model=hashing_embedding, filters=_filters("title", 3, "text_match")
        )


def test_node_embeddings_of_different_lengths_name_the_node_and_both_dimensions():
    nodes = [
        TextNode(id_="a", text="Alpha.", embedding=[1.0, 0.0, 0.0]),
        TextNode(id_="b", text="Beta.", embedding=[0.0, 1.0]),
    ]
    with pytest.raises(ValueError, match=r"'b' has dimension 2, the first \('a'\) has dimension 3"):
        MultiHopRetriever(nodes)
    nodes[1] = TextNode(id_="b", text="Beta.", embedding=[float("nan"), 1.0, 0.0])
    with pytest.raises(ValueError, match=r"node embeddings contain NaN or inf .*\['b'\]"):
        MultiHopRetriever(nodes)


def test_a_node_without_an_embedding_among_embedded_ones_needs_the_embed_model(
    hashing_embedding,
) -> None:
    nodes = _nodes()
    for node in nodes[1:]:
        node.embedding = hashing_embedding.get_text_embedding(node.text)
    with pytest.raises(ValueError, match=r"1 of 5 nodes have no embedding \(e.g. \['pw'\]\)"):
        MultiHopRetriever(nodes, similarity_top_k=3)
    found = MultiHopRetriever(nodes, similarity_top_k=3, embed_model=hashing_embedding)
    assert len(found.retrieve(QUESTION)) == 3
