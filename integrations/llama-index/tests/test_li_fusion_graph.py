from __future__ import annotations

import asyncio
import doctest

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    EntityGraphRetriever,
    PITFusionRetriever,
    nodes_to_corpus,
)
from llama_index.retrievers.rag_multihop import fusion as fusion_module
from llama_index.retrievers.rag_multihop import graph as graph_module

from rag_multihop.graph import EntityGraph

NODES = {
    pid: TextNode(id_=pid, text=text, metadata={"title": title})
    for pid, title, text in [
        ("wedding", "Polish Wedding", "Polish Wedding is a film directed by Theresa Connelly."),
        ("connelly", "Theresa Connelly", "Theresa Connelly is an American director."),
        ("rope", "Rope", "Rope is a 1948 film by Alfred Hitchcock."),
        ("hitchcock", "Alfred Hitchcock", "Alfred Hitchcock was an English director."),
        ("island", "Lonely Island", "Nothing links here."),
    ]
}


class Fixed(BaseRetriever):
    """A LlamaIndex retriever returning fixed scored nodes."""

    def __init__(self, scored: list[tuple[str, float | None]]) -> None:
        self.nodes = [NodeWithScore(node=NODES[pid], score=s) for pid, s in scored]
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.nodes)


DENSE = [("wedding", 0.82), ("rope", 0.61), ("island", 0.44), ("connelly", 0.30)]
SPARSE = [("connelly", 9.1), ("wedding", 4.2), ("hitchcock", 1.5)]


def test_drop_in_positional_arguments_and_signals_hidden_from_the_llm():
    fusion = PITFusionRetriever(
        [Fixed(DENSE), Fixed(SPARSE)], similarity_top_k=3, names=["dense", "bm25"]
    )
    top = fusion.retrieve("Who directed Polish Wedding?")
    assert [n.node.node_id for n in top] == ["wedding", "connelly", "rope"]
    signals = top[0].node.metadata[SIGNALS_KEY]
    assert set(signals) == {"dense", "dense_cal", "bm25", "bm25_cal"}
    assert signals["dense"] == 0.82 and signals["dense_cal"] == 1.0
    assert SIGNALS_KEY not in top[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert SIGNALS_KEY not in top[0].node.get_content(metadata_mode=MetadataMode.EMBED)


def test_dbsf_agrees_with_query_fusion_retriever():
    ours = PITFusionRetriever([Fixed(DENSE), Fixed(SPARSE)], similarity_top_k=10, fusion="dbsf")
    theirs = QueryFusionRetriever(
        [Fixed(DENSE), Fixed(SPARSE)],
        llm=MockLLM(),
        mode="dist_based_score",  # type: ignore[arg-type]
        similarity_top_k=10,
        num_queries=1,
        use_async=False,
    )
    got = {n.node.node_id: n.score for n in ours.retrieve("q")}
    expected = {n.node.node_id: n.score for n in theirs.retrieve("q")}
    assert got == pytest.approx(expected)


def test_rrf_agrees_with_query_fusion_retriever_up_to_the_weight():
    # LlamaIndex: sum 1 / (rank0 + 60) = sum 1 / (rank1 + 59); ours weights each list 1/2
    ours = PITFusionRetriever(
        [Fixed(DENSE), Fixed(SPARSE)], similarity_top_k=10, fusion="rrf", params={"k": 59}
    )
    theirs = QueryFusionRetriever(
        [Fixed(DENSE), Fixed(SPARSE)],
        llm=MockLLM(),
        mode="reciprocal_rerank",  # type: ignore[arg-type]
        similarity_top_k=10,
        num_queries=1,
        use_async=False,
    )
    got = {n.node.node_id: 2 * (n.score or 0.0) for n in ours.retrieve("q")}
    assert got == pytest.approx({n.node.node_id: n.score for n in theirs.retrieve("q")})


def test_async_children_run_concurrently():
    events: list[str] = []

    class Recording(Fixed):
        async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            events.append("start")
            await asyncio.sleep(0.01)
            events.append("end")
            return list(self.nodes)

    fusion = PITFusionRetriever([Recording(DENSE), Recording(SPARSE)], similarity_top_k=2)
    top = asyncio.run(fusion.aretrieve("q"))
    assert events == ["start", "start", "end", "end"]  # both awaited together
    assert [n.node.node_id for n in top] == [n.node.node_id for n in fusion.retrieve("q")]


def test_children_nodes_are_not_mutated():
    dense = Fixed(DENSE)
    before = [(n.score, dict(n.node.metadata)) for n in dense.nodes]
    PITFusionRetriever([dense, Fixed(SPARSE)], similarity_top_k=10).retrieve("q")
    assert [(n.score, dict(n.node.metadata)) for n in dense.nodes] == before


def test_takes_query_fusion_retriever_arguments_and_refuses_mode_with_a_reason():
    fusion = PITFusionRetriever(
        [Fixed(DENSE), Fixed(SPARSE)],
        None,  # llm, in QueryFusionRetriever's positional order
        None,  # query_gen_prompt
        None,  # mode
        3,  # similarity_top_k
        num_queries=1,
        use_async=True,
        verbose=True,
        retriever_weights=[0.7, 0.3],
    )
    assert len(fusion.retrieve("Who directed Polish Wedding?")) == 3
    with pytest.raises(ValueError, match="does not run QueryFusionRetriever's mode=.*fusion='rrf'"):
        PITFusionRetriever([Fixed(DENSE), Fixed(SPARSE)], mode="reciprocal_rerank")
    with pytest.raises(TypeError, match="second positional argument is llm"):
        PITFusionRetriever([Fixed(DENSE), Fixed(SPARSE)], 3)


def test_num_queries_generates_queries_with_the_given_llm():
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    prompts: list[str] = []

    class TwoQueries(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
            prompts.append(prompt)
            return CompletionResponse(text="Theresa Connelly director\nPolish Wedding film\nextra")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
            raise NotImplementedError

    asked: list[str] = []

    class Recording(Fixed):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            asked.append(query_bundle.query_str)
            return super()._retrieve(query_bundle)

    llm = TwoQueries()
    fusion = PITFusionRetriever(
        [Recording(DENSE), Recording(SPARSE)], llm=llm, num_queries=3, similarity_top_k=3
    )
    top = fusion.retrieve("Who directed Polish Wedding?")
    assert "Generate 2 search queries" in prompts[0]
    assert sorted(set(asked)) == sorted(
        {"Who directed Polish Wedding?", "Theresa Connelly director", "Polish Wedding film"}
    )
    assert len(asked) == 6 and "retriever_0@q1_cal" in top[0].node.metadata[SIGNALS_KEY]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ([[Fixed(DENSE)]], {}, "at least 2 retrievers, got 1"),
        ([[Fixed(DENSE), Fixed(SPARSE)]], {"names": ["a"]}, "names must be 2 distinct strings"),
        ([[Fixed(DENSE), Fixed(SPARSE)]], {"retriever_weights": [1, -1]}, "finite and >= 0"),
        ([[Fixed(DENSE), Fixed(SPARSE)]], {"fusion": "x"}, r"choose from: boltzmann, dbsf"),
        ([[Fixed(DENSE), Fixed(SPARSE)]], {"similarity_top_k": 0}, "similarity_top_k must be"),
    ],
)
def test_bad_settings_are_clear_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        PITFusionRetriever(*args, **kwargs)


def test_a_child_node_without_score_is_a_clear_error():
    fusion = PITFusionRetriever([Fixed(DENSE), Fixed([("rope", None)])])
    with pytest.raises(ValueError, match="retriever 'retriever_1' returned node 'rope' without"):
        fusion.retrieve("q")


# --- entity-graph retriever -------------------------------------------------------------------


def test_graph_retriever_from_nodes_with_and_without_seeds():
    nodes = list(NODES.values())
    alone = EntityGraphRetriever.from_nodes(nodes, similarity_top_k=2)
    top = alone.retrieve("Who is the director of Polish Wedding?")
    assert [n.node.node_id for n in top] == ["wedding", "connelly"]
    assert set(top[0].node.metadata[SIGNALS_KEY]) == {"graph"}  # a copy carries the signals
    assert NODES["wedding"].metadata == {"title": "Polish Wedding"}
    seeded = EntityGraphRetriever(
        alone.graph, nodes, seed_retriever=Fixed([("rope", 0.9)]), use_entities=False
    )
    assert [n.node.node_id for n in seeded.retrieve("anything")][:2] == ["rope", "hitchcock"]
    async_top = asyncio.run(seeded.aretrieve("anything"))
    assert [n.node.node_id for n in async_top] == [n.node.node_id for n in seeded.retrieve("x")]


def test_graph_retriever_warns_when_every_seed_scores_zero_or_less(caplog):
    nodes = list(NODES.values())
    graph = EntityGraphRetriever.from_nodes(nodes).graph
    non_positive = Fixed([("rope", None), ("island", -1.5)])
    seeded_only = EntityGraphRetriever(
        graph, nodes, seed_retriever=non_positive, use_entities=False
    )
    with caplog.at_level("WARNING"):
        assert seeded_only.retrieve("anything") == []
    assert "all 2 seed passage(s) of query 'anything' have a score <= 0, which the walk" in (
        caplog.text
    )
    assert "no query entity is in the graph either: returning no candidates" in caplog.text
    caplog.clear()
    with_entities = EntityGraphRetriever(graph, nodes, seed_retriever=non_positive)
    with caplog.at_level("WARNING"):
        assert with_entities.retrieve("Who is the director of Polish Wedding?")
    assert "it starts from the query's entities alone" in caplog.text
    caplog.clear()
    positive = Fixed([("rope", 0.0), ("island", 0.2)])
    with caplog.at_level("WARNING"):
        assert EntityGraphRetriever(graph, nodes, seed_retriever=positive).retrieve("anything")
    assert "seed passage(s)" not in caplog.text


def test_graph_retriever_fused_with_a_vector_retriever():
    nodes = list(NODES.values())
    graph = EntityGraphRetriever.from_nodes(nodes, seed_retriever=Fixed(DENSE), similarity_top_k=5)
    fusion = PITFusionRetriever([Fixed(DENSE), graph], similarity_top_k=3, names=["dense", "graph"])
    top = fusion.retrieve("Who is the director of Polish Wedding?")
    # the second hop (connelly, dense rank 4) moves up to 3 with the graph's evidence
    assert [n.node.node_id for n in top] == ["wedding", "rope", "connelly"]
    assert set(top[2].node.metadata[SIGNALS_KEY]) == {"dense", "dense_cal", "graph", "graph_cal"}


def test_graph_retriever_filters_its_seeds_and_results():
    nodes = list(NODES.values())
    question = "Who is the director of Polish Wedding?"
    only_connelly = MetadataFilters(filters=[MetadataFilter(key="title", value="Theresa Connelly")])
    graph = EntityGraphRetriever.from_nodes(nodes, similarity_top_k=2, filters=only_connelly)
    assert [n.node.node_id for n in graph.retrieve(question)] == ["connelly"]
    not_rope = MetadataFilters(
        filters=[MetadataFilter(key="title", operator=FilterOperator.NE, value="Rope")]
    )
    seeds = Fixed([("rope", 0.9), ("wedding", 0.5)])
    unfiltered = EntityGraphRetriever(graph.graph, nodes, seed_retriever=seeds, use_entities=False)
    assert [n.node.node_id for n in unfiltered.retrieve("x")][:2] == ["rope", "wedding"]
    filtered = EntityGraphRetriever(
        graph.graph, nodes, seed_retriever=seeds, use_entities=False, filters=not_rope
    )
    found = [n.node.node_id for n in filtered.retrieve("x")]
    assert found[:2] == ["wedding", "connelly"] and "rope" not in found  # rope did not seed
    assert [n.node.node_id for n in asyncio.run(filtered.aretrieve("x"))] == found
    nobody = MetadataFilters(filters=[MetadataFilter(key="title", value="Nobody")])
    excluded = EntityGraphRetriever(graph.graph, nodes, seed_retriever=seeds, filters=nobody)
    assert excluded.retrieve(question) == [] and asyncio.run(excluded.aretrieve(question)) == []


def test_graph_retriever_refuses_filters_it_cannot_match():
    nodes = list(NODES.values())
    haystack_style = {"field": "meta.title", "operator": "==", "value": "Rope"}
    with pytest.raises(TypeError, match="filters must be LlamaIndex MetadataFilters.*got dict"):
        EntityGraphRetriever.from_nodes(nodes, filters=haystack_style)
    rope = MetadataFilters(filters=[MetadataFilter(key="title", value="Rope")])
    nested = MetadataFilters(filters=[rope, MetadataFilter(key="title", value="Polish Wedding")])
    with pytest.raises(ValueError, match="nested MetadataFilters are not supported"):
        EntityGraphRetriever.from_nodes(nodes, filters=nested)
    text_match = MetadataFilter(key="year", operator=FilterOperator.TEXT_MATCH, value=1948)
    with pytest.raises(ValueError, match="'year' with operator 'text_match' needs a string"):
        EntityGraphRetriever.from_nodes(nodes, filters=MetadataFilters(filters=[text_match]))


def test_graph_synonym_edges_use_settings_embed_model(settings_embed_model):
    retriever = EntityGraphRetriever.from_nodes(list(NODES.values()))
    assert retriever.graph.settings["encoder"] == settings_embed_model.model_name


def test_graph_retriever_errors_and_saved_graphs(tmp_path):
    nodes = list(NODES.values())
    retriever = EntityGraphRetriever.from_nodes(nodes, seed_retriever=Fixed([("rope", 1.0)]))
    retriever.graph.save(tmp_path / "g")
    reloaded = EntityGraphRetriever(EntityGraph.load(tmp_path / "g", nodes_to_corpus(nodes)), nodes)
    assert [n.node.node_id for n in reloaded.retrieve("Rope?")] == [
        n.node.node_id for n in EntityGraphRetriever(retriever.graph, nodes).retrieve("Rope?")
    ]
    with pytest.raises(ValueError, match="built from another corpus"):
        EntityGraphRetriever(retriever.graph, nodes[:3])
    stranger = TextNode(id_="elsewhere", text="x")

    class Stranger(Fixed):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=stranger, score=1.0)]

    bad = EntityGraphRetriever(retriever.graph, nodes, seed_retriever=Stranger([]))
    with pytest.raises(ValueError, match="node 'elsewhere', which is not among the graph's nodes"):
        bad.retrieve("q")


def test_docstring_examples_run():
    for module in (fusion_module, graph_module):
        assert doctest.testmod(module).failed == 0


def test_graph_persists_beside_the_storage_context(tmp_path):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    nodes = list(NODES.values())
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    graph = EntityGraphRetriever.from_nodes(nodes, similarity_top_k=3)
    index.storage_context.persist(persist_dir=str(tmp_path))
    saved = graph.persist(tmp_path)
    assert saved.parent == tmp_path and (tmp_path / "docstore.json").is_file()
    again = EntityGraphRetriever.from_persist_dir(tmp_path, similarity_top_k=3)
    question = "Who is the director of Polish Wedding?"
    assert [n.node.node_id for n in again.retrieve(question)] == [
        n.node.node_id for n in graph.retrieve(question)
    ]
    (tmp_path / "empty").mkdir()
    VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=8)).storage_context.persist(
        persist_dir=str(tmp_path / "empty")
    )
    with pytest.raises(ValueError, match="holds no nodes .* pass nodes="):
        EntityGraphRetriever.from_persist_dir(tmp_path / "empty")
