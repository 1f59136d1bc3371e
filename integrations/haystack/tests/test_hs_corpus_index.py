"""An indexing pipeline keeps a persistent corpus index in step (writer + delete path); the
query component reads the index and notices new versions without reading the store."""

from __future__ import annotations

import datetime
import logging
from dataclasses import replace

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.components.retrievers.rag_multihop import (
    CorpusIndexMultiHopRetriever,
    MultiHopRetriever,
)
from haystack_integrations.components.writers.rag_multihop import CorpusIndexWriter
from haystack_integrations.components.writers.rag_multihop import corpus_index as writer_module
from hs_fakes import HashingDocumentEmbedder, HashingTextEmbedder

from rag_multihop.store import CorpusIndex

TEXTS = {
    "pw": ("Polish Wedding", "Polish Wedding is a 1998 film directed by Theresa Connelly."),
    "tc": ("Theresa Connelly", "Theresa Connelly is an American director born in Philadelphia."),
    "ph": ("Philadelphia", "Philadelphia is a city in Pennsylvania."),
    "cd": ("Claire Danes", "Claire Danes is an American actress."),
}
QUESTION = "Where was the director of the film Polish Wedding born?"


def _documents(ids):
    return [Document(id=i, content=TEXTS[i][1], meta={"title": TEXTS[i][0]}) for i in ids]


def _indexing(store, path) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("embedder", HashingDocumentEmbedder())
    pipeline.add_component("store_writer", DocumentWriter(store))
    pipeline.add_component("index_writer", CorpusIndexWriter(path))
    pipeline.connect("embedder.documents", "store_writer.documents")
    pipeline.connect("embedder.documents", "index_writer.documents")
    return pipeline


class _CountingStore(InMemoryDocumentStore):
    reads = 0

    def filter_documents(self, filters=None):
        type(self).reads += 1
        return super().filter_documents(filters)


def test_an_indexing_pipeline_feeds_the_index_and_the_query_side_follows(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    store = _CountingStore()
    indexing = _indexing(store, path)
    indexing.run({"embedder": {"documents": _documents(["pw", "cd"])}})
    retriever = CorpusIndexMultiHopRetriever(path, top_k=3)
    query = HashingTextEmbedder().run(QUESTION)["embedding"]
    first = retriever.run(query=QUESTION, query_embedding=query)
    assert first["version"] == 1 and [d.id for d in first["documents"]] == ["pw", "cd"]

    indexing.run({"embedder": {"documents": _documents(["tc", "ph"])}})
    second = retriever.run(query=QUESTION, query_embedding=query)
    assert second["version"] == 2 and store.count_documents() == 4
    reads = _CountingStore.reads
    in_memory = MultiHopRetriever(store, top_k=3).run(query=QUESTION, query_embedding=query)
    assert _CountingStore.reads > reads  # the store-backed component reads the store...
    assert [d.id for d in second["documents"]] == [d.id for d in in_memory["documents"]]
    assert [d.score for d in second["documents"]] == pytest.approx(
        [d.score for d in in_memory["documents"]]
    )

    CorpusIndexWriter(path).delete_documents(["tc"])
    third = retriever.run(query=QUESTION, query_embedding=query)
    assert third["version"] == 3 and "tc" not in [d.id for d in third["documents"]]
    assert third["documents"][0].meta["rag_multihop_signals"]["pair"] > 0


def test_the_components_serialise_and_refuse_bad_input(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    assert CorpusIndexWriter.from_dict(writer.to_dict()).index_path == path
    with pytest.raises(ValueError, match="no embedding.*after the document embedder"):
        writer.run(_documents(["pw"]))
    with pytest.raises(ValueError, match="index_path must be a non-empty path"):
        CorpusIndexWriter("")
    assert writer.run([]) == {"documents_written": 0}
    writer.run(HashingDocumentEmbedder().run(_documents(["pw", "tc"]))["documents"])
    retriever = CorpusIndexMultiHopRetriever(
        path, top_k=2, preload=True, first_hops=3, keep_first_stage=False, tail_fusion="rrf"
    )
    again = CorpusIndexMultiHopRetriever.from_dict(retriever.to_dict())
    assert again.settings == retriever.settings and again.top_k == 2 and again.preload
    query = HashingTextEmbedder().run(QUESTION)["embedding"]
    lazy = CorpusIndexMultiHopRetriever(path, top_k=2, first_hops=3, keep_first_stage=False)
    lazy.settings = retriever.settings
    assert [d.id for d in again.run(QUESTION, query)["documents"]] == [
        d.id for d in lazy.run(QUESTION, query)["documents"]
    ]
    with pytest.raises(ValueError, match="preload must be True or False, got 'yes'"):
        CorpusIndexMultiHopRetriever(path, preload="yes")  # type: ignore[arg-type]
    assert again.settings.first_hops == 3 and again.settings.tail_fusion == "rrf"
    assert again.settings.keep_first_stage is False
    with pytest.raises(ValueError, match="tail_fusion must be one of"):
        CorpusIndexMultiHopRetriever(path, tail_fusion="nope")
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        CorpusIndexMultiHopRetriever(path, top_k=0)


def test_an_index_emptied_by_deletes_answers_no_documents_until_written(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    writer.run(HashingDocumentEmbedder().run(_documents(["pw", "tc"]))["documents"])
    retriever = CorpusIndexMultiHopRetriever(path, top_k=2)
    query = HashingTextEmbedder().run(QUESTION)["embedding"]
    assert [d.id for d in retriever.run(QUESTION, query)["documents"]] == ["pw", "tc"]
    writer.delete_documents(["pw", "tc"])
    empty = retriever.run(QUESTION, query)
    assert empty["documents"] == [] and empty["version"] == 2
    assert empty["trace"]["candidates"] == 0
    writer.run(HashingDocumentEmbedder().run(_documents(["ph"]))["documents"])
    again = retriever.run(QUESTION, query)
    assert [d.id for d in again["documents"]] == ["ph"] and again["version"] == 3


def test_a_changed_file_split_again_replaces_its_splits(tmp_path) -> None:
    from haystack.components.preprocessors import DocumentSplitter

    path = str(tmp_path / "corpus.idx")
    pipeline = Pipeline()
    pipeline.add_component("splitter", DocumentSplitter(split_by="word", split_length=8))
    pipeline.add_component("embedder", HashingDocumentEmbedder())
    pipeline.add_component("index_writer", CorpusIndexWriter(path))
    pipeline.connect("splitter.documents", "embedder.documents")
    pipeline.connect("embedder.documents", "index_writer.documents")
    long = " ".join(f"Rope is film number {i} by Alfred Hitchcock." for i in range(4))
    other = Document(id="vertigo", content="Vertigo is a 1958 film.")
    pipeline.run({"splitter": {"documents": [Document(id="rope", content=long), other]}})
    assert CorpusIndex(path).snapshot().n_live > 2
    pipeline.run({"splitter": {"documents": [Document(id="rope", content="Rope is short.")]}})
    corpus = CorpusIndex(path).snapshot().corpus
    assert [corpus[i].text for i in corpus.ids] == [other.content, "Rope is short."]
    CorpusIndexWriter(path).delete_sources(["rope"])
    assert CorpusIndex(path).snapshot().corpus.ids == [corpus.ids[0]]


def test_a_source_id_of_another_type_or_empty_is_read_as_a_string_or_none(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    embed = HashingDocumentEmbedder().run
    first = [Document(id="a1", content="Rope is a film.", meta={"source_id": 7, "split_id": 0})]
    writer.run(embed(first)["documents"])
    empty = [Document(id="e1", content="No source here.", meta={"source_id": "", "split_id": 0})]
    writer.run(embed(empty)["documents"])
    second = [
        Document(id="a2", content="Rope is a 1948 film.", meta={"source_id": 7, "split_id": 0})
    ]
    writer.run(embed(second)["documents"])
    assert CorpusIndex(path).snapshot().corpus.ids == ["e1", "a2"]
    writer.delete_sources(["7"])
    assert CorpusIndex(path).snapshot().corpus.ids == ["e1"]


def test_a_source_id_of_the_users_own_on_documents_that_are_no_chunks_deletes_nothing(
    tmp_path,
) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    embed = HashingDocumentEmbedder().run
    for run in range(2):
        crawl = [
            Document(content=f"Article {run}-{i} of a crawl.", meta={"source_id": "crawl"})
            for i in range(3)
        ]
        writer.run(embed(crawl)["documents"])
    assert CorpusIndex(path).snapshot().n_live == 6


def test_embeddings_of_different_lengths_name_the_document_and_both_lengths(tmp_path) -> None:
    writer = CorpusIndexWriter(str(tmp_path / "corpus.idx"))
    ragged = [
        Document(id="a", content="Alpha.", embedding=[1.0, 0.0, 0.0]),
        Document(id="b", content="Beta.", embedding=[0.0, 1.0]),
    ]
    with pytest.raises(ValueError, match=r"'b' has dimension 2, the first \('a'\) has dimension 3"):
        writer.run(ragged)


def test_the_retriever_requires_a_query_embedding(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    CorpusIndexWriter(path).run(HashingDocumentEmbedder().run(_documents(["pw"]))["documents"])
    with pytest.raises(ValueError, match="query_embedding is required: connect the text embedder"):
        CorpusIndexMultiHopRetriever(path).run(query=QUESTION, query_embedding=None)  # type: ignore[arg-type]


def test_a_retriever_started_before_the_index_exists_answers_none_until_written(
    tmp_path, caplog
) -> None:
    path = str(tmp_path / "corpus.idx")
    retriever = CorpusIndexMultiHopRetriever(path, top_k=2)
    query = HashingTextEmbedder().run(QUESTION)["embedding"]
    with caplog.at_level(logging.WARNING):
        retriever.warm_up()
        for _ in range(2):
            empty = retriever.run(QUESTION, query)
            assert empty["documents"] == [] and empty["version"] == 0
    warnings = [r for r in caplog.records if "no corpus index at" in r.message]
    assert len(warnings) == 1 and path in warnings[0].message
    CorpusIndexWriter(path).run(
        HashingDocumentEmbedder().run(_documents(["pw", "tc"]))["documents"]
    )
    found = retriever.run(QUESTION, query)
    assert [d.id for d in found["documents"]] == ["pw", "tc"] and found["version"] == 1


def _embedded(ids) -> list[Document]:
    return HashingDocumentEmbedder().run(_documents(ids))["documents"]


def test_a_batch_of_another_dimension_is_refused_before_anything_is_written(
    tmp_path, monkeypatch
) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    writer.run(_embedded(["pw", "tc"]))
    version = CorpusIndex(path).version
    monkeypatch.setattr(writer_module, "write_sources", _never_called)
    other_model = [replace(d, embedding=[1.0, 0.0, 0.0]) for d in _embedded(["ph", "cd"])]
    with pytest.raises(
        ValueError,
        match=r"document 'ph' has an embedding of dimension 3, but the index at .*corpus\.idx "
        r"holds dimension 64: embed the documents with the model the index was built with",
    ):
        writer.run(other_model)
    assert CorpusIndex(path).version == version


def test_a_query_embedding_of_another_dimension_names_both_dimensions(tmp_path) -> None:
    path = str(tmp_path / "corpus.idx")
    CorpusIndexWriter(path).run(_embedded(["pw", "tc"]))
    retriever = CorpusIndexMultiHopRetriever(path)
    with pytest.raises(
        ValueError,
        match=r"query_embedding has dimension 3, but the index at .*corpus\.idx holds dimension "
        r"64: connect the text embedder of the model that embedded the indexed documents",
    ):
        retriever.run(query=QUESTION, query_embedding=[1.0, 0.0, 0.0])


def test_repeated_document_ids_in_one_batch_are_refused_before_the_index_is_made(
    tmp_path,
) -> None:
    path = tmp_path / "corpus.idx"
    repeated = _embedded(["pw", "tc"]) + _embedded(["pw"])
    with pytest.raises(
        ValueError,
        match=r"1 document id\(s\) occur more than once in the batch, e.g. \['pw'\]: the index "
        "holds one passage per id",
    ):
        CorpusIndexWriter(str(path)).run(repeated)
    assert not path.exists()


def test_documents_without_content_are_written_with_a_warning_naming_them(tmp_path, caplog) -> None:
    path = str(tmp_path / "corpus.idx")
    blank = Document(id="blank", content=None, meta={"title": "Blank"}, embedding=[0.0] * 64)
    with caplog.at_level(logging.WARNING):
        CorpusIndexWriter(path).run([blank, *_embedded(["pw"])])
    assert "1 document(s) have no text, e.g. ['blank']" in caplog.text
    assert CorpusIndex(path).snapshot().corpus.ids == ["blank", "pw"]


def test_meta_of_any_type_is_written_and_a_title_or_source_that_is_a_collection_is_named(
    tmp_path,
) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(path)
    odd = _embedded(["pw", "tc"])
    odd[0].meta.update(when=datetime.datetime(1998, 1, 1), vector=np.arange(3))
    odd[1].meta.update(source_id=np.arange(3))  # no split_id: the user's own field, ignored
    assert writer.run(odd) == {"documents_written": 2}
    titled = [
        replace(d, meta={"title": np.array(["Philadelphia", "PA"])}) for d in _embedded(["ph"])
    ]
    with pytest.raises(
        ValueError, match=r"document 'ph': meta\['title'\] must be a string, got ndarray"
    ):
        writer.run(titled)
    split = [replace(d, meta={"source_id": np.arange(3), "split_id": 0}) for d in _embedded(["ph"])]
    with pytest.raises(
        ValueError,
        match=r"document 'ph': meta\['source_id'\] must be the id of the document it was split "
        r"from \(a string\), got ndarray",
    ):
        writer.run(split)
    assert CorpusIndex(path).snapshot().corpus.ids == ["pw", "tc"]


def _never_called(*args, **kwargs):
    raise AssertionError("the core was called with a batch the writer should have refused")


def test_the_writer_merges_small_segments_as_its_merge_factor_says(tmp_path) -> None:
    rng = np.random.default_rng(0)

    def one(i: str) -> list[Document]:
        return [Document(id=i, content=f"Page {i}.", embedding=rng.normal(size=8).tolist())]

    for factor, expected in ((0, 5), (2, 3)):  # 2: a, then bc and de merged
        writer = CorpusIndexWriter(str(tmp_path / f"idx{factor}"), merge_factor=factor)
        for i in "abcde":
            writer.run(one(i))
        assert CorpusIndex(writer.index_path).info()["segments"] == expected
        assert CorpusIndexWriter.from_dict(writer.to_dict()).merge_factor == factor
    with pytest.raises(ValueError, match="factor must be at least 2"):
        CorpusIndexWriter(str(tmp_path / "bad"), merge_factor=1)
    with pytest.raises(ValueError, match="merge_factor must be 0 .never merge. or at least 2"):
        CorpusIndexWriter(str(tmp_path / "bad"), merge_factor=-1)
