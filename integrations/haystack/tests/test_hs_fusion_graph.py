from __future__ import annotations

import asyncio
import doctest
import warnings

import numpy as np
import pytest

from rag_multihop._atomic import artifact_path

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.errors import FilterError
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.joiners.rag_multihop import pit_joiner as joiner_module
from hs_fakes import CopyingStore, HashingTextEmbedder, SlowStore, longest_loop_stall


@pytest.fixture
def graph_module():
    return pytest.importorskip(
        "haystack_integrations.components.retrievers.rag_multihop.graph_retriever",
        reason="reinstall the Haystack integration so it ships the retrievers package: "
        "pip install -e integrations/haystack",
    )


TEXTS = [
    (
        "wedding",
        "Polish Wedding",
        "Polish Wedding is a film directed by Theresa Connelly.",
        [1, 0, 0],
    ),
    ("connelly", "Theresa Connelly", "Theresa Connelly is an American director.", [0.6, 0.8, 0]),
    ("rope", "Rope", "Rope is a 1948 film by Alfred Hitchcock.", [0, 0, 1]),
    (
        "hitchcock",
        "Alfred Hitchcock",
        "Alfred Hitchcock was an English film director.",
        [0, 0.6, 0.8],
    ),
]


def make_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(
        [
            Document(id=pid, content=text, meta={"title": title}, embedding=[float(x) for x in vec])
            for pid, title, text, vec in TEXTS
        ]
    )
    return store


def scored(pairs: list[tuple[str, float]]) -> list[Document]:
    return [Document(id=pid, content=pid, score=s) for pid, s in pairs]


DENSE = scored([("wedding", 0.9), ("rope", 0.7), ("connelly", 0.2)])
SPARSE = scored([("connelly", 8.0), ("hitchcock", 3.0)])


def fusion_pipeline(joiner: object) -> Pipeline:
    store = make_store()
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=3))
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(document_store=store, top_k=3))
    pipeline.add_component("joiner", joiner)
    pipeline.connect("bm25.documents", "joiner.documents")
    pipeline.connect("dense.documents", "joiner.documents")
    return pipeline


def test_drop_in_for_document_joiner_in_a_pipeline():
    inputs = {"bm25": {"query": "director Connelly"}, "dense": {"query_embedding": [1.0, 0, 0]}}
    ours = fusion_pipeline(PITDocumentJoiner(top_k=3)).run(inputs)["joiner"]["documents"]
    theirs = fusion_pipeline(DocumentJoiner(top_k=3)).run(inputs)["joiner"]["documents"]
    assert len(ours) == len(theirs) == 3
    assert {d.id for d in ours} <= {pid for pid, *_ in TEXTS}
    assert all(
        set(d.meta[SIGNALS_KEY]) >= {"list_0", "list_0_cal"} or "list_1" in d.meta[SIGNALS_KEY]
        for d in ours
    )
    assert ours[0].meta["title"] in {t for _, t, *_ in TEXTS}


def test_fused_scores_and_signals():
    out = PITDocumentJoiner(fusion="linear", names=["dense", "bm25"]).run([DENSE, SPARSE])
    docs = out["documents"]
    assert [d.id for d in docs] == ["connelly", "wedding", "rope", "hitchcock"]
    assert docs[0].score == pytest.approx((1 / 3 + 1.0) / 2)
    assert docs[0].meta[SIGNALS_KEY] == pytest.approx(
        {"dense": 0.2, "dense_cal": 1 / 3, "bm25": 8.0, "bm25_cal": 1.0}
    )


def test_inputs_are_not_mutated():
    before = [(d.score, dict(d.meta)) for d in DENSE]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Haystack warns on in-place mutation of a Document
        PITDocumentJoiner().run([DENSE, SPARSE])
    assert [(d.score, dict(d.meta)) for d in DENSE] == before


def test_top_k_at_run_time_and_async():
    joiner = PITDocumentJoiner(top_k=3)
    assert len(joiner.run([DENSE, SPARSE], top_k=1)["documents"]) == 1
    assert joiner.run([DENSE, SPARSE], top_k=0)["documents"] == []
    sync = joiner.run([DENSE, SPARSE])["documents"]
    async_docs = asyncio.run(joiner.run_async([DENSE, SPARSE]))["documents"]
    assert [(d.id, d.score) for d in async_docs] == [(d.id, d.score) for d in sync]
    assert joiner.run([[], []])["documents"] == []


def test_to_dict_from_dict_round_trip_is_exact():
    joiner = PITDocumentJoiner(
        calibration="minmax",
        fusion="linear",
        weights=[2.0, 1.0],
        top_k=4,
        pool_cap=[10, None],
        consensus_beta=0.2,
        params={},
        names=["dense", "bm25"],
    )
    data = joiner.to_dict()
    assert data["type"].endswith("pit_joiner.PITDocumentJoiner")
    assert PITDocumentJoiner.from_dict(data).to_dict() == data
    pipeline = fusion_pipeline(joiner)
    assert Pipeline.loads(pipeline.dumps()).to_dict() == pipeline.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "lists", "message"),
    [
        ({"fusion": "sum"}, None, r"unknown fusion 'sum'; choose from: boltzmann"),
        ({"top_k": 0}, None, "top_k must be None or a positive integer, got 0"),
        ({"weights": [1, -2]}, None, "finite and >= 0"),
        ({}, [DENSE], r"received 1 list\(s\) of documents; connect at least 2"),
        ({"weights": [1.0]}, [DENSE, SPARSE], "weights has 1 value"),
        ({"names": ["a", "b", "c"]}, [DENSE, SPARSE], "names has 3 entries but 2 lists"),
        ({}, [DENSE, [Document(id="x", content="x")]], "document 'x' without a score"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, lists, message):
    with pytest.raises(ValueError, match=message):
        PITDocumentJoiner(**kwargs).run(lists or [DENSE, SPARSE])


def test_negative_run_time_top_k_is_an_error():
    with pytest.raises(ValueError, match="top_k must be >= 0, got -1"):
        PITDocumentJoiner().run([DENSE, SPARSE], top_k=-1)


def test_repeated_document_in_one_list_keeps_its_best_score():
    repeated = scored([("rope", 0.2), ("rope", 0.9)])
    other = scored([("rope", 0.5), ("wedding", 0.1)])
    fused = PITDocumentJoiner(names=["a", "b"]).run([repeated, other])["documents"]
    assert fused[0].meta[SIGNALS_KEY]["a"] == 0.9


def test_takes_document_joiner_arguments_and_refuses_join_mode_with_a_reason():
    joiner = PITDocumentJoiner(None, [0.7, 0.3], 2, True)  # DocumentJoiner's order
    assert len(joiner.run([DENSE, SPARSE])["documents"]) == 2
    with pytest.raises(ValueError, match="does not run DocumentJoiner's join_mode=.*fusion='rrf'"):
        PITDocumentJoiner("reciprocal_rank_fusion")
    with pytest.raises(ValueError, match="sort_by_score=False has no meaning"):
        PITDocumentJoiner(sort_by_score=False)


# --- entity-graph retriever -------------------------------------------------------------------


def test_graph_retriever_runs_lazily_and_reaches_the_second_hop(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    retriever = EntityGraphRetriever(make_store(), top_k=2)
    docs = retriever.run(query="Who is the director of Polish Wedding?")["documents"]
    assert [d.id for d in docs] == ["wedding", "connelly"]
    assert docs[0].meta["title"] == "Polish Wedding" and docs[0].score > docs[1].score > 0
    again = asyncio.run(retriever.run_async(query="Who is the director of Polish Wedding?"))
    assert [(d.id, d.score) for d in again["documents"]] == [(d.id, d.score) for d in docs]


def test_graph_retriever_seeded_by_an_embedding_retriever_in_a_pipeline(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    store = make_store()
    pipeline = Pipeline()
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(document_store=store, top_k=2))
    pipeline.add_component("graph", EntityGraphRetriever(store, top_k=3, use_entities=False))
    pipeline.connect("dense.documents", "graph.documents")
    out = pipeline.run({"dense": {"query_embedding": [0.0, 0.0, 1.0]}, "graph": {"query": "q"}})
    assert [d.id for d in out["graph"]["documents"]][:2] == ["rope", "hitchcock"]


def test_graph_retriever_warns_when_every_seed_scores_zero_or_less(graph_module, caplog):
    retriever = graph_module.EntityGraphRetriever(make_store(), top_k=3, use_entities=False)
    non_positive = [
        Document(id="rope", content="x", score=None),
        Document(id="wedding", content="x", score=-0.4),
    ]
    with caplog.at_level("WARNING"):
        assert retriever.run(query="q", documents=non_positive)["documents"] == []
    assert "all 2 seed passage(s) of query 'q' have a score <= 0, which the walk drops" in (
        caplog.text
    )
    assert "no query entity is in the graph either: returning no candidates" in caplog.text
    caplog.clear()
    with_entities = graph_module.EntityGraphRetriever(make_store(), top_k=3)
    with caplog.at_level("WARNING"):
        found = with_entities.run(
            query="Who is the director of Polish Wedding?", documents=non_positive
        )
    assert found["documents"] and "it starts from the query's entities alone" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert retriever.run(query="q", documents=scored([("rope", 0.0), ("hitchcock", 0.3)]))[
            "documents"
        ]
    assert "seed passage(s)" not in caplog.text


def test_graph_retriever_over_a_store_that_copies_array_meta_is_built_once(graph_module):
    store = CopyingStore()
    store.write_documents(
        [Document(id="a", content="Rope is a film by Alfred Hitchcock.", meta={"v": np.ones(3)})]
    )
    retriever = graph_module.EntityGraphRetriever(store, top_k=5)
    graph = retriever.graph
    for _ in range(2):
        assert [d.id for d in retriever.run(query="Alfred Hitchcock")["documents"]] == ["a"]
    assert retriever.graph is graph  # the copies' equal arrays are no change


def test_graph_retriever_saves_and_reloads_its_graph(tmp_path, graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    path = str(tmp_path / "graph")
    first = EntityGraphRetriever(make_store(), graph_path=path)
    first.warm_up()
    first.warm_up()  # idempotent
    assert (artifact_path(tmp_path / "graph") / "graph.json").is_file()
    reloaded = EntityGraphRetriever(make_store(), graph_path=path)
    query = "Which film did Alfred Hitchcock make?"
    assert [d.id for d in reloaded.run(query=query)["documents"]] == [
        d.id for d in first.run(query=query)["documents"]
    ]
    other = InMemoryDocumentStore()
    other.write_documents([Document(id="x", content="Something else.")])
    with pytest.raises(ValueError, match="built from another corpus"):
        EntityGraphRetriever(other, graph_path=path).warm_up()


def test_graph_retriever_round_trip_and_errors(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    retriever = EntityGraphRetriever(make_store(), top_k=3, seed_top_n=1, damping=0.3)
    data = retriever.to_dict()
    assert EntityGraphRetriever.from_dict(data).to_dict() == data
    with pytest.raises(ValueError, match=r"damping must be in \[0, 1\), got 1.5"):
        EntityGraphRetriever(make_store(), damping=1.5)
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        EntityGraphRetriever(make_store(), top_k=0)
    stranger = Document(id="elsewhere", content="x", score=1.0)
    with pytest.raises(ValueError, match="seed document 'elsewhere' is not in the document store"):
        retriever.run(query="q", documents=[stranger])
    assert retriever.run(query="nothing to see here")["documents"] == []


def test_docstring_examples_run(graph_module):
    for module in (joiner_module, graph_module):
        assert doctest.testmod(module).failed == 0


def test_graph_retriever_builds_synonym_edges_with_the_given_embedder(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    assert EntityGraphRetriever(make_store()).graph.settings["encoder"] is None
    with_embedder = EntityGraphRetriever(make_store(), embedder=HashingTextEmbedder())
    assert with_embedder.graph.settings["encoder"] is not None
    by_name = EntityGraphRetriever(make_store(), embedder="some/model", synonym_threshold=0.8)
    data = by_name.to_dict()
    assert data["init_parameters"]["embedder"] == "some/model"
    assert EntityGraphRetriever.from_dict(by_name.to_dict()).to_dict() == data
    with pytest.raises(ValueError, match="synonym_threshold"):
        EntityGraphRetriever(make_store(), synonym_threshold=1.5)
    with pytest.raises(TypeError, match="embedder must be None"):
        EntityGraphRetriever(make_store(), embedder=42)


def test_graph_retriever_notices_documents_written_after_warm_up(graph_module, caplog):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    store = InMemoryDocumentStore()
    store.write_documents([Document(id="a", content="Rope is a film by Alfred Hitchcock.")])
    retriever = EntityGraphRetriever(store, top_k=5)
    retriever.warm_up()
    store.write_documents([Document(id="b", content="Alfred Hitchcock was a director.")])
    assert {d.id for d in retriever.run(query="Who is Alfred Hitchcock?")["documents"]} == {
        "a",
        "b",
    }
    frozen = EntityGraphRetriever(store, top_k=5, auto_refresh=False)
    frozen.warm_up()
    store.write_documents([Document(id="c", content="Alfred Hitchcock made Vertigo.")])
    with caplog.at_level("WARNING"):
        frozen.run(query="Who is Alfred Hitchcock?")
        frozen.run(query="Who is Alfred Hitchcock?")
    assert sum("entity graph is stale" in r.message for r in caplog.records) == 1
    frozen.refresh()
    assert "c" in {d.id for d in frozen.run(query="Who is Alfred Hitchcock?")["documents"]}


def test_graph_retriever_over_an_empty_store_answers_none_until_written(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    store = InMemoryDocumentStore()
    retriever = EntityGraphRetriever(store, top_k=5)
    retriever.warm_up()  # a pipeline warmed up before its first ingestion
    assert retriever.run(query="Who is Alfred Hitchcock?") == {"documents": []}
    with pytest.raises(ValueError, match="seed document 'x' is not in the document store"):
        retriever.run(query="Who?", documents=[Document(id="x", content="x", score=0.5)])
    with pytest.raises(ValueError, match="no entity graph yet"):
        retriever.graph  # noqa: B018
    store.write_documents([Document(id="a", content="Rope is a film by Alfred Hitchcock.")])
    assert [d.id for d in retriever.run(query="Who is Alfred Hitchcock?")["documents"]] == ["a"]


def test_graph_retriever_notices_an_overwrite_that_keeps_the_count(graph_module, caplog):
    from haystack.document_stores.types import DuplicatePolicy

    store = InMemoryDocumentStore()
    store.write_documents([Document(id="a", content="Rope is a film by Alfred Hitchcock.")])
    retriever = graph_module.EntityGraphRetriever(store, top_k=5)
    assert [d.id for d in retriever.run(query="Alfred Hitchcock")["documents"]] == ["a"]
    rewritten = Document(id="a", content="Vertigo is a film by Kim Novak.")
    store.write_documents([rewritten], policy=DuplicatePolicy.OVERWRITE)
    with caplog.at_level("INFO"):
        assert retriever.run(query="Alfred Hitchcock")["documents"] == []
        found = retriever.run(query="Kim Novak")["documents"]
    assert [d.content for d in found] == [rewritten.content]
    assert sum("document 'a' changed in the store" in r.message for r in caplog.records) == 1


def test_graph_retriever_notices_a_delete_and_add_that_keeps_the_count(graph_module):
    store = InMemoryDocumentStore()
    store.write_documents([Document(id="a", content="Rope is a film by Alfred Hitchcock.")])
    retriever = graph_module.EntityGraphRetriever(store, top_k=5)
    retriever.warm_up()
    store.delete_documents(["a"])
    store.write_documents([Document(id="b", content="Vertigo is a film by Alfred Hitchcock.")])
    assert [d.id for d in retriever.run(query="Alfred Hitchcock")["documents"]] == ["b"]


def test_graph_retriever_notices_new_meta_and_keeps_an_unchanged_graph(graph_module):
    from haystack.document_stores.types import DuplicatePolicy

    store = make_store()
    retriever = graph_module.EntityGraphRetriever(store, top_k=5)
    graph = retriever.graph
    retriever.run(query="Alfred Hitchcock")
    assert retriever.graph is graph  # nothing changed: not rebuilt
    moved = Document(id="rope", content=TEXTS[2][2], meta={"title": "Rope", "lang": "de"})
    assert TEXTS[2][0] == "rope"
    store.write_documents([moved], policy=DuplicatePolicy.OVERWRITE)
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    found = retriever.run(query="Alfred Hitchcock", filters=german)["documents"]
    assert [d.id for d in found] == ["rope"] and found[0].meta["lang"] == "de"


def test_graph_retriever_without_auto_refresh_checks_the_count_only(graph_module):
    from haystack.document_stores.types import DuplicatePolicy

    store = InMemoryDocumentStore()
    store.write_documents([Document(id="a", content="Rope is a film by Alfred Hitchcock.")])
    frozen = graph_module.EntityGraphRetriever(store, top_k=5, auto_refresh=False)
    frozen.warm_up()
    store.write_documents(
        [Document(id="a", content="Vertigo is a film by Kim Novak.")],
        policy=DuplicatePolicy.OVERWRITE,
    )
    assert [d.id for d in frozen.run(query="Alfred Hitchcock")["documents"]] == ["a"]  # stale
    frozen.refresh()
    assert frozen.run(query="Alfred Hitchcock")["documents"] == []


def test_graph_retriever_filters_its_seeds_and_results(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            Document(id="a", content="Rope is a film by Alfred Hitchcock.", meta={"lang": "en"}),
            Document(id="b", content="Alfred Hitchcock was a director.", meta={"lang": "de"}),
        ]
    )
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    retriever = EntityGraphRetriever(store, top_k=5, filters=german)
    assert [d.id for d in retriever.run(query="Alfred Hitchcock")["documents"]] == ["b"]
    english = {"field": "meta.lang", "operator": "==", "value": "en"}
    out = asyncio.run(retriever.run_async(query="Alfred Hitchcock", filters=english))
    assert [d.id for d in out["documents"]] == ["a"]
    assert retriever.to_dict()["init_parameters"]["filters"] == german
    seeds = [Document(id="a", content="", meta={"lang": "en"}, score=1.0)]  # English
    german_seeded = retriever.run(query="nothing known", documents=seeds)["documents"]
    english_seeded = retriever.run(query="nothing known", documents=seeds, filters=english)
    assert german_seeded == [] and [d.id for d in english_seeded["documents"]][:1] == ["a"]
    nothing = {"field": "meta.lang", "operator": "==", "value": "fr"}
    assert retriever.run(query="Alfred Hitchcock", documents=seeds, filters=nothing) == {
        "documents": []
    }
    merging = EntityGraphRetriever(store, filters=german, filter_policy="merge")
    only_a = {"field": "id", "operator": "==", "value": "a"}
    assert merging.run(query="Alfred Hitchcock", filters=only_a)["documents"] == []  # de AND a
    replacing = retriever.run(query="Alfred Hitchcock", filters=only_a)["documents"]
    assert [d.id for d in replacing] == ["a"]
    data = merging.to_dict()
    assert data["init_parameters"]["filter_policy"] == "merge"
    assert EntityGraphRetriever.from_dict(data).to_dict() == data


def test_graph_retriever_refuses_malformed_filters(graph_module):
    EntityGraphRetriever = graph_module.EntityGraphRetriever
    no_operator = {"field": "meta.lang", "value": "en"}
    with pytest.raises(FilterError, match="unknown comparison operator None"):
        EntityGraphRetriever(make_store(), filters=no_operator)
    retriever = EntityGraphRetriever(make_store())
    not_a_condition = {"operator": "OR", "conditions": ["meta.lang == en"]}
    with pytest.raises(FilterError, match="a condition must be a dict, got 'meta.lang == en'"):
        retriever.run(query="Alfred Hitchcock", filters=not_a_condition)
    legacy = {"meta.lang": "en"}  # Haystack 1.x syntax
    with pytest.raises(FilterError, match="neither a comparison .* nor a logical condition"):
        asyncio.run(retriever.run_async(query="Alfred Hitchcock", filters=legacy))


@pytest.mark.anyio
async def test_graph_retriever_run_async_leaves_the_event_loop_free(graph_module):
    store = SlowStore()
    store.write_documents(make_store().filter_documents())
    retriever = graph_module.EntityGraphRetriever(store, top_k=3)
    sync = retriever.run(query="Who directed Rope?")
    result, stall, duration = await longest_loop_stall(
        retriever.run_async(query="Who directed Rope?")
    )
    assert stall < duration / 2
    assert [(d.id, d.score) for d in result["documents"]] == [
        (d.id, d.score) for d in sync["documents"]
    ]
