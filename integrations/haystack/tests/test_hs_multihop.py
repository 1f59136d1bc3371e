"""``MultiHopRetriever`` as a Haystack component: the core's ranking, new documents with
signals, the store's embeddings or an embedder, a pipeline, serialisation, and bad input."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY, documents_to_corpus
from haystack_integrations.components.retrievers.rag_multihop import (
    CorpusIndexMultiHopRetriever,
    MultiHopRetriever,
)
from hs_fakes import (
    CopyingStore,
    HashingDocumentEmbedder,
    HashingTextEmbedder,
    SlowStore,
    longest_loop_stall,
)

from rag_multihop import Query
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings
from rag_multihop.testing import hashing_vectors

TEXTS = [
    ("pw", "Polish Wedding", "Polish Wedding is a 1998 film directed by Theresa Connelly."),
    ("tc", "Theresa Connelly", "Theresa Connelly is an American director born in Philadelphia."),
    ("ph", "Philadelphia", "Philadelphia is a city in Pennsylvania."),
    ("rope", "Rope", "Rope is a 1948 film directed by Alfred Hitchcock."),
    ("ah", "Alfred Hitchcock", "Alfred Hitchcock was an English director born in London."),
]
QUESTION = "Where was the director of the film Polish Wedding born?"


def _store(embedded: bool = True) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    vectors = hashing_vectors([f"{t}\n{x}" for _, t, x in TEXTS])
    store.write_documents(
        [
            Document(
                id=i,
                content=x,
                meta={"title": t},
                embedding=v.tolist() if embedded else None,
            )
            for (i, t, x), v in zip(TEXTS, vectors, strict=True)
        ]
    )
    return store


def test_the_ranking_is_the_cores_and_documents_are_new(hashing_encoder):
    store = _store()
    retriever = MultiHopRetriever(store, top_k=3)
    query_embedding = hashing_vectors([QUESTION])[0].tolist()
    out = retriever.run(query=QUESTION, query_embedding=query_embedding)
    documents = store.filter_documents()
    core = CoreMultiHopRetriever.from_corpus(documents_to_corpus(documents), hashing_encoder)
    expected = core.retrieve(Query(QUESTION), k=3)
    assert [d.id for d in out["documents"]] == [c.id for c in expected]
    assert [d.id for d in out["documents"]][:2] == ["pw", "tc"]
    assert out["documents"][0].meta[SIGNALS_KEY]["named"] == 1.0
    assert out["trace"]["pair"] == ["pw", "tc"]
    assert all(SIGNALS_KEY not in d.meta for d in store.filter_documents())


def test_an_embedder_embeds_documents_and_queries():
    retriever = MultiHopRetriever(_store(embedded=False), top_k=2, embedder=HashingTextEmbedder())
    assert [d.id for d in retriever.run(query=QUESTION)["documents"]] == ["pw", "tc"]
    documents = MultiHopRetriever(_store(embedded=False), embedder=HashingDocumentEmbedder())
    assert len(documents.run(query=QUESTION, top_k=4)["documents"]) == 4


def test_in_a_pipeline_with_a_text_embedder():
    pipeline = Pipeline()
    pipeline.add_component("embedder", HashingTextEmbedder())
    pipeline.add_component("multihop", MultiHopRetriever(_store(), top_k=2))
    pipeline.connect("embedder.embedding", "multihop.query_embedding")
    out = pipeline.run({"embedder": {"text": QUESTION}, "multihop": {"query": QUESTION}})
    assert [d.id for d in out["multihop"]["documents"]] == ["pw", "tc"]


def test_new_documents_in_the_store_are_picked_up():
    store = _store()
    retriever = MultiHopRetriever(store, top_k=10)
    embedding = hashing_vectors([QUESTION])[0].tolist()
    assert len(retriever.run(query=QUESTION, query_embedding=embedding)["documents"]) == 5
    store.write_documents(
        [
            Document(
                id="ln",
                content="London is a city.",
                meta={"title": "London"},
                embedding=hashing_vectors(["London\nLondon is a city."])[0].tolist(),
            )
        ]
    )
    assert len(retriever.run(query=QUESTION, query_embedding=embedding)["documents"]) == 6


def test_to_dict_round_trips_with_flat_settings():
    knobs = dict(
        first_hops=3,
        graph_tail=False,
        ppr="power",
        keep_first_stage=False,
        subjects=False,
        graph_seed_passages=1,
        tail_calibration="minmax",
        tail_fusion="rrf",
    )
    retriever = MultiHopRetriever(_store(), top_k=4, embedder="some/model", **knobs)
    data = retriever.to_dict()
    assert data["init_parameters"]["first_hops"] == 3 and "settings" not in data["init_parameters"]
    again = MultiHopRetriever.from_dict(data)
    assert again.settings == MultiHopSettings(**knobs)
    assert again.top_k == 4 and again.embedder == "some/model"
    assert again.to_dict() == data


@pytest.mark.parametrize("retriever", [MultiHopRetriever, CorpusIndexMultiHopRetriever])
def test_every_core_setting_is_a_flat_init_parameter(retriever):
    import dataclasses
    import inspect

    parameters = inspect.signature(retriever.__init__).parameters
    assert "settings" not in parameters
    for field in dataclasses.fields(MultiHopSettings):
        assert field.name in parameters, f"MultiHopSettings.{field.name} is not exposed"
        assert parameters[field.name].default == getattr(MultiHopSettings(), field.name)


@pytest.mark.anyio
async def test_run_async_gives_the_sync_result():
    retriever = MultiHopRetriever(_store(), top_k=3)
    embedding = hashing_vectors([QUESTION])[0].tolist()
    sync = retriever.run(query=QUESTION, query_embedding=embedding)
    result = await retriever.run_async(query=QUESTION, query_embedding=embedding)
    assert [d.id for d in result["documents"]] == [d.id for d in sync["documents"]]


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        MultiHopRetriever(_store(), top_k=0)
    with pytest.raises(ValueError, match="first_hops must be a positive integer, got 0"):
        MultiHopRetriever(_store(), first_hops=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'settings'"):
        MultiHopRetriever(_store(), settings={"first_hops": 3})
    with pytest.raises(TypeError, match="embedder must be None"):
        MultiHopRetriever(_store(), embedder=42)
    retriever = MultiHopRetriever(_store())
    with pytest.raises(ValueError, match="no query_embedding and no embedder"):
        retriever.run(query=QUESTION)
    with pytest.raises(ValueError, match="dimension 3, expected 64"):
        retriever.run(query=QUESTION, query_embedding=[1.0, 0.0, 0.0])


FILMS = {"field": "meta.title", "operator": "in", "value": ["Polish Wedding", "Rope"]}
NOT_THE_DIRECTOR = {"field": "id", "operator": "!=", "value": "tc"}
NOTHING = {"field": "meta.title", "operator": "==", "value": "no such title"}


def _embedding() -> list[float]:
    return hashing_vectors([QUESTION])[0].tolist()


def test_filters_restrict_every_step_to_the_matching_documents():
    retriever = MultiHopRetriever(_store(), top_k=5, filters=NOT_THE_DIRECTOR)
    out = retriever.run(query=QUESTION, query_embedding=_embedding())
    ids = [d.id for d in out["documents"]]
    assert ids[0] == "pw" and "tc" not in ids and "tc" not in out["trace"]["pair"]
    assert len(ids) == 4


@pytest.mark.anyio
async def test_a_filter_that_excludes_everything_returns_nothing():
    retriever = MultiHopRetriever(_store(), top_k=3)
    out = retriever.run(query=QUESTION, query_embedding=_embedding(), filters=NOTHING)
    assert out["documents"] == [] and out["trace"]["pair"] == []
    again = await retriever.run_async(query=QUESTION, query_embedding=_embedding(), filters=NOTHING)
    assert again["documents"] == []


def test_run_filters_replace_or_merge_with_the_init_filters():
    only_the_director = {"field": "id", "operator": "==", "value": "tc"}
    replacing = MultiHopRetriever(_store(), filters=FILMS)
    assert [
        d.id for d in replacing.run(query=QUESTION, query_embedding=_embedding())["documents"]
    ] == ["pw", "rope"]
    replaced = replacing.run(
        query=QUESTION, query_embedding=_embedding(), filters=only_the_director
    )
    assert [d.id for d in replaced["documents"]] == ["tc"]
    merging = MultiHopRetriever(_store(), filters=FILMS, filter_policy="merge")
    merged = merging.run(query=QUESTION, query_embedding=_embedding(), filters=only_the_director)
    assert merged["documents"] == []  # a film AND the director: none


def test_to_dict_round_trips_the_filters_and_their_policy():
    retriever = MultiHopRetriever(_store(), filters=FILMS, filter_policy="merge")
    data = retriever.to_dict()
    assert data["init_parameters"]["filters"] == FILMS
    assert data["init_parameters"]["filter_policy"] == "merge"
    again = MultiHopRetriever.from_dict(data)
    assert again.filters == FILMS and again.to_dict() == data


def test_malformed_filters_are_refused_with_the_reason():
    from haystack.errors import FilterError

    with pytest.raises(FilterError, match="unknown comparison operator 'equals'"):
        MultiHopRetriever(_store(), filters={"field": "id", "operator": "equals", "value": "x"})
    retriever = MultiHopRetriever(_store())
    with pytest.raises(FilterError, match="neither a comparison .* nor a logical condition"):
        retriever.run(query=QUESTION, query_embedding=_embedding(), filters={"meta.title": "Rope"})
    with pytest.raises(ValueError, match="'sometimes'"):
        MultiHopRetriever(_store(), filter_policy="sometimes")


# ---------------------------------------------------- a store changed with the same count


def _document(doc_id: str, title: str, text: str, **meta: object) -> Document:
    vector = hashing_vectors([f"{title}\n{text}"])[0].tolist()
    return Document(id=doc_id, content=text, meta={"title": title, **meta}, embedding=vector)


def _everything(retriever: MultiHopRetriever, query: str = QUESTION) -> list[Document]:
    embedding = hashing_vectors([query])[0].tolist()
    return retriever.run(query=query, query_embedding=embedding, top_k=10)["documents"]


def test_a_delete_and_add_that_keeps_the_count_never_serves_the_deleted_document():
    from haystack.document_stores.types import DuplicatePolicy

    store = _store()
    retriever = MultiHopRetriever(store)
    assert "rope" in {d.id for d in _everything(retriever)}
    store.delete_documents(["rope"])
    store.write_documents(
        [_document("vt", "Vertigo", "Vertigo is a 1958 film directed by Alfred Hitchcock.")],
        policy=DuplicatePolicy.FAIL,
    )
    assert store.count_documents() == len(TEXTS)
    found = _everything(retriever, "Who directed Vertigo?")
    assert "rope" not in {d.id for d in found} and "vt" in {d.id for d in found}
    assert all("Rope is a 1948 film" not in (d.content or "") for d in found)


def test_an_overwrite_with_new_text_serves_the_new_text_only():
    from haystack.document_stores.types import DuplicatePolicy

    store = _store()
    retriever = MultiHopRetriever(store)
    old = {d.id: d.content for d in _everything(retriever)}
    assert "London" in old["ah"]
    rewritten = "Alfred Hitchcock was an English director who moved to Los Angeles."
    store.write_documents(
        [_document("ah", "Alfred Hitchcock", rewritten)], policy=DuplicatePolicy.OVERWRITE
    )
    found = {d.id: d.content for d in _everything(retriever)}
    assert found["ah"] == rewritten
    assert all("born in London" not in (text or "") for text in found.values())


def test_a_meta_only_change_is_seen_by_the_filters():
    from haystack.document_stores.types import DuplicatePolicy

    store = _store()
    retriever = MultiHopRetriever(store)
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    embedding = hashing_vectors([QUESTION])[0].tolist()
    assert (
        retriever.run(query=QUESTION, query_embedding=embedding, filters=german)["documents"] == []
    )
    rope = next(t for t in TEXTS if t[0] == "rope")
    store.write_documents([_document(*rope, lang="de")], policy=DuplicatePolicy.OVERWRITE)
    out = retriever.run(query=QUESTION, query_embedding=embedding, filters=german)
    assert [d.id for d in out["documents"]] == ["rope"]
    assert out["documents"][0].meta["lang"] == "de"


def test_new_embeddings_with_the_same_text_rebuild_the_vectors():
    from haystack.document_stores.types import DuplicatePolicy

    store = _store()
    retriever = MultiHopRetriever(store)
    _everything(retriever)
    pw = next(t for t in TEXTS if t[0] == "pw")
    moved = replace(_document(*pw), embedding=hashing_vectors(["something else"])[0].tolist())
    store.write_documents([moved], policy=DuplicatePolicy.OVERWRITE)
    _everything(retriever)
    row = retriever._current().corpus.index_of("pw")
    assert retriever._current().vectors[row].tolist() == pytest.approx(moved.embedding, abs=1e-6)


def test_an_unchanged_store_is_not_rebuilt():
    retriever = MultiHopRetriever(_store())
    _everything(retriever)
    core = retriever._current()
    _everything(retriever)
    assert retriever._current() is core


def test_a_store_that_copies_array_meta_is_not_rebuilt_on_every_run():
    store = CopyingStore()
    store.write_documents(
        [replace(d, meta={**d.meta, "v": np.ones(3)}) for d in _store().filter_documents()]
    )
    retriever = MultiHopRetriever(store)
    _everything(retriever)
    core = retriever._current()
    assert [d.id for d in _everything(retriever)][:2] == ["pw", "tc"]
    assert retriever._current() is core


def test_without_auto_refresh_the_count_only_is_checked_with_one_warning(caplog):
    from haystack.document_stores.types import DuplicatePolicy

    store = _store()
    frozen = MultiHopRetriever(store, auto_refresh=False)
    _everything(frozen)
    rewritten = "Alfred Hitchcock was an English director who moved to Los Angeles."
    store.write_documents(
        [_document("ah", "Alfred Hitchcock", rewritten)], policy=DuplicatePolicy.OVERWRITE
    )
    assert {d.id: d.content for d in _everything(frozen)}["ah"] != rewritten  # as documented
    store.write_documents([_document("ln", "London", "London is a city.")])
    with caplog.at_level("WARNING"):
        _everything(frozen)
        _everything(frozen)
    assert sum("multi-hop retriever is stale" in r.message for r in caplog.records) == 1
    frozen.refresh()
    found = {d.id: d.content for d in _everything(frozen)}
    assert found["ah"] == rewritten and "ln" in found
    data = frozen.to_dict()
    assert data["init_parameters"]["auto_refresh"] is False
    assert MultiHopRetriever.from_dict(data).to_dict() == data


def test_embeddings_of_different_lengths_name_the_document_and_both_dimensions():
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            Document(id="a", content="Alpha.", embedding=[1.0, 0.0, 0.0]),
            Document(id="b", content="Beta.", embedding=[0.0, 1.0]),
        ]
    )
    with pytest.raises(ValueError, match=r"'b' has dimension 2, the first \('a'\) has dimension 3"):
        MultiHopRetriever(store).run(query="alpha?", query_embedding=[1.0, 0.0, 0.0])
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            Document(id="a", content="Alpha.", embedding=[1.0, 0.0]),
            Document(id="b", content="Beta.", embedding=[float("nan"), 1.0]),
        ]
    )
    with pytest.raises(ValueError, match=r"NaN or inf .*ids \['b'\]"):
        MultiHopRetriever(store).run(query="alpha?", query_embedding=[1.0, 0.0])


def test_a_store_without_documents_yet_warms_up_and_answers_none_until_written():
    store = InMemoryDocumentStore()
    retriever = MultiHopRetriever(store, top_k=3)
    retriever.warm_up()  # a pipeline warmed up before its first ingestion
    embedding = hashing_vectors([QUESTION])[0].tolist()
    empty = retriever.run(query=QUESTION, query_embedding=embedding)
    assert empty["documents"] == [] and empty["trace"]["candidates"] == 0
    with pytest.raises(ValueError, match="non-empty string"):
        retriever.run(query=" ", query_embedding=embedding)
    full = _store()
    store.write_documents(full.filter_documents())
    found = retriever.run(query=QUESTION, query_embedding=embedding)["documents"]
    assert [d.id for d in found][:2] == ["pw", "tc"]
    store.delete_documents([d.id for d in full.filter_documents()])
    assert retriever.run(query=QUESTION, query_embedding=embedding)["documents"] == []


def test_a_store_where_only_some_documents_are_embedded_needs_the_embedder():
    store = _store()
    store.write_documents([Document(id="ln", content="London is a city.")])
    embedding = hashing_vectors([QUESTION])[0].tolist()
    with pytest.raises(
        ValueError, match=r"1 of 6 documents .*no embedding \(e.g. 'ln'\).*embedder="
    ):
        MultiHopRetriever(store).run(query=QUESTION, query_embedding=embedding)
    given = MultiHopRetriever(store, top_k=2, embedder=HashingDocumentEmbedder())
    assert [d.id for d in given.run(query=QUESTION)["documents"]] == ["pw", "tc"]


@pytest.mark.anyio
async def test_run_async_leaves_the_event_loop_free_and_gives_the_sync_result():
    store = SlowStore()
    store.write_documents(_store().filter_documents())
    retriever = MultiHopRetriever(store, top_k=3)
    embedding = hashing_vectors([QUESTION])[0].tolist()
    sync = retriever.run(query=QUESTION, query_embedding=embedding)
    result, stall, duration = await longest_loop_stall(
        retriever.run_async(query=QUESTION, query_embedding=embedding)
    )
    assert stall < duration / 2
    assert [(d.id, d.score) for d in result["documents"]] == [
        (d.id, d.score) for d in sync["documents"]
    ]


def test_concurrent_run_async_calls_build_the_retriever_once():
    def embedder_runs(concurrent: bool) -> int:
        store = SlowStore(delay=0.1)
        store.write_documents(_store(embedded=False).filter_documents())
        embedder = HashingDocumentEmbedder()
        retriever = MultiHopRetriever(store, top_k=2, embedder=embedder)
        if concurrent:

            async def both() -> None:
                await asyncio.gather(*(retriever.run_async(query=QUESTION) for _ in range(2)))

            asyncio.run(both())
        else:
            for _ in range(2):
                retriever.run(query=QUESTION)
        return embedder.runs

    assert embedder_runs(concurrent=True) == embedder_runs(concurrent=False)
