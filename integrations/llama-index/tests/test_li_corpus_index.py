"""An IngestionPipeline keeps a persistent corpus index in step; the retriever reads it and
notices new versions (no document count, no re-read of a store)."""

from __future__ import annotations

import datetime
import logging
import shutil
import threading

import numpy as np
import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    CorpusIndexMultiHopRetriever,
    CorpusIndexWriter,
    MultiHopRetriever,
)
from llama_index.retrievers.rag_multihop import corpus_index as corpus_index_module

from rag_multihop.store import CorpusIndex

TEXTS = {
    "pw": ("Polish Wedding", "Polish Wedding is a 1998 film directed by Theresa Connelly."),
    "tc": ("Theresa Connelly", "Theresa Connelly is an American director born in Philadelphia."),
    "ph": ("Philadelphia", "Philadelphia is a city in Pennsylvania."),
    "cd": ("Claire Danes", "Claire Danes is an American actress."),
}
QUESTION = "Where was the director of the film Polish Wedding born?"


def _nodes(ids):
    return [TextNode(id_=i, text=TEXTS[i][1], metadata={"title": TEXTS[i][0]}) for i in ids]


def _ids(retriever, embed_model) -> list[str]:
    bundle = QueryBundle(QUESTION, embedding=embed_model.get_query_embedding(QUESTION))
    return [n.node.node_id for n in retriever.retrieve(bundle)]


def test_a_pipeline_feeds_the_index_and_the_retriever_follows_its_versions(
    tmp_path, hashing_embedding
) -> None:
    path = str(tmp_path / "corpus.idx")
    store = SimpleVectorStore()
    pipeline = IngestionPipeline(
        transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)],
        vector_store=store,
    )
    pipeline.run(nodes=_nodes(["pw", "cd"]))
    retriever = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=3, embed_model=hashing_embedding
    )
    assert retriever.version == 1 and _ids(retriever, hashing_embedding) == ["pw", "cd"]
    assert len(store.data.embedding_dict) == 2  # the pipeline's vector store still gets them

    pipeline.run(nodes=_nodes(["tc", "ph"]))
    ids = _ids(retriever, hashing_embedding)
    assert retriever.version == 2 and ids[:2] == ["pw", "tc"]
    in_memory = MultiHopRetriever(
        [
            TextNode(
                id_=n.node_id,
                text=n.text,
                metadata=n.metadata,
                embedding=hashing_embedding.get_text_embedding(f"{n.metadata['title']}\n{n.text}"),
            )
            for n in _nodes(["pw", "cd", "tc", "ph"])
        ],
        similarity_top_k=3,
        embed_model=hashing_embedding,
    )
    assert ids == _ids(in_memory, hashing_embedding)
    preloaded = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=3, embed_model=hashing_embedding, preload=True
    )
    assert _ids(preloaded, hashing_embedding) == ids
    with pytest.raises(ValueError, match="preload must be True or False, got 1"):
        CorpusIndexMultiHopRetriever(path, embed_model=hashing_embedding, preload=1)  # type: ignore[arg-type]

    CorpusIndexWriter(index_path=path).delete(["tc"])
    result = retriever.retrieve(
        QueryBundle(QUESTION, embedding=hashing_embedding.get_query_embedding(QUESTION))
    )
    assert retriever.version == 3 and "tc" not in [n.node.node_id for n in result]
    assert SIGNALS_KEY in result[0].node.metadata
    assert SIGNALS_KEY in result[0].node.excluded_llm_metadata_keys


def test_the_writer_needs_embeddings_and_reupserts_changed_nodes(
    tmp_path, hashing_embedding
) -> None:
    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(index_path=path)
    with pytest.raises(ValueError, match="no embedding.*after the embed model"):
        writer(_nodes(["pw"]))
    pipeline = IngestionPipeline(transformations=[hashing_embedding, writer])
    pipeline.run(nodes=_nodes(["pw", "tc"]))
    changed = TextNode(
        id_="pw", text="Polish Wedding is a 1998 comedy.", metadata={"title": "Polish Wedding"}
    )
    pipeline.run(nodes=[changed])
    snapshot = CorpusIndex(path).snapshot()
    assert snapshot.corpus.ids == ["tc", "pw"] and snapshot.corpus["pw"].text == changed.text
    assert np.isfinite(snapshot.vectors).all()


def test_an_index_created_empty_answers_no_nodes_until_written(tmp_path, hashing_embedding) -> None:
    path = str(tmp_path / "corpus.idx")
    CorpusIndex.create(path, dim=len(hashing_embedding.get_text_embedding("x")))
    retriever = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=3, embed_model=hashing_embedding
    )  # an app that opens its retriever before the first ingestion
    assert _ids(retriever, hashing_embedding) == [] and retriever.version == 0
    assert retriever.last_trace.candidates == 0
    with pytest.raises(ValueError, match="holds no passages yet"):
        retriever.core  # noqa: B018
    pipeline = IngestionPipeline(
        transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)]
    )
    pipeline.run(nodes=_nodes(["pw", "tc"]))
    assert _ids(retriever, hashing_embedding) == ["pw", "tc"] and retriever.version == 1
    CorpusIndexWriter(index_path=path).delete(["pw", "tc"])
    assert _ids(retriever, hashing_embedding) == [] and retriever.version == 2


def test_a_changed_document_ingested_again_replaces_its_chunks(tmp_path, hashing_embedding) -> None:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    path = str(tmp_path / "corpus.idx")
    writer = CorpusIndexWriter(index_path=path)
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=24, chunk_overlap=0),
            hashing_embedding,
            writer,
        ]
    )
    first = " ".join(f"Rope is film number {i} by Alfred Hitchcock." for i in range(6))
    other = Document(id_="vertigo.txt", text="Vertigo is a 1958 film by Alfred Hitchcock.")
    old_nodes = pipeline.run(documents=[Document(id_="rope.txt", text=first), other])
    assert len(old_nodes) > 2  # the file is cut into chunks with random ids
    pipeline.run(documents=[Document(id_="rope.txt", text="Rope is a 1948 film.")])
    snapshot = CorpusIndex(path).snapshot()
    texts = [snapshot.corpus[i].text for i in snapshot.corpus.ids]
    assert texts == [old_nodes[-1].text, "Rope is a 1948 film."]  # no old chunk of rope.txt
    writer.delete_ref_doc("rope.txt")
    assert [CorpusIndex(path).snapshot().corpus[0].text] == [other.text]


def test_a_cached_pipeline_run_never_stands_in_for_a_write_the_index_lacks(
    tmp_path, hashing_embedding
) -> None:
    # IngestionPipeline caches each step by its nodes and the component's to_dict; the
    # writer's dict carries the index's version, so its step is replayed only when no
    # write happened since
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(index_path=str(path))
    pipeline = IngestionPipeline(transformations=[hashing_embedding, writer])
    pipeline.run(nodes=_nodes(["pw", "tc", "ph"]))
    writer.delete(["pw", "tc"])  # e.g. a sync that later turned out wrong
    pipeline.run(nodes=_nodes(["pw", "tc", "ph"]))
    assert CorpusIndex(path).snapshot().corpus.ids == ["ph", "pw", "tc"]
    version = CorpusIndex(path).version
    pipeline.run(nodes=_nodes(["pw", "tc", "ph"]))  # nothing changed: nothing written
    assert CorpusIndex(path).version == version
    shutil.rmtree(path)
    pipeline.run(nodes=_nodes(["pw", "tc", "ph"]))  # the index removed: written again
    assert len(CorpusIndex(path).snapshot().corpus) == 3
    again = CorpusIndexWriter.from_dict(writer.to_dict())
    assert again.index_path == writer.index_path


def test_the_writer_names_a_node_whose_embedding_differs_in_length(tmp_path) -> None:
    nodes = _nodes(["pw", "tc"])
    nodes[0].embedding, nodes[1].embedding = [1.0, 0.0, 0.0], [1.0, 0.0]
    with pytest.raises(
        ValueError, match="'tc' has dimension 2, the first \\('pw'\\) has dimension 3"
    ):
        CorpusIndexWriter(index_path=str(tmp_path / "idx"))(nodes)


def test_a_retriever_made_before_any_index_exists_answers_nothing_until_one_does(
    tmp_path, hashing_embedding, caplog
) -> None:
    path = tmp_path / "corpus.idx"  # no index, not even an empty one: the first ingestion
    retriever = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=3, embed_model=hashing_embedding
    )
    assert _ids(retriever, hashing_embedding) == [] and retriever.version == 0
    assert "no corpus index at" in caplog.text and str(path) in caplog.text
    IngestionPipeline(
        transformations=[hashing_embedding, CorpusIndexWriter(index_path=str(path))]
    ).run(nodes=_nodes(["pw", "tc"]))
    assert _ids(retriever, hashing_embedding) == ["pw", "tc"] and retriever.version == 1


@pytest.mark.anyio
async def test_the_async_retrieval_runs_off_the_event_loop_with_the_same_answer(
    tmp_path, hashing_embedding
) -> None:
    path = str(tmp_path / "corpus.idx")
    IngestionPipeline(transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)]).run(
        nodes=_nodes(["pw", "tc", "ph", "cd"])
    )
    retriever = CorpusIndexMultiHopRetriever(
        path, similarity_top_k=3, embed_model=hashing_embedding
    )
    threads = []
    ranked = retriever.core.run

    def recording(*args, **kwargs):
        threads.append(threading.get_ident())
        return ranked(*args, **kwargs)

    retriever.core.run = recording  # type: ignore[method-assign]
    bundle = QueryBundle(QUESTION, embedding=hashing_embedding.get_query_embedding(QUESTION))
    found = [n.node.node_id for n in await retriever.aretrieve(bundle)]
    assert threads and threads[0] != threading.get_ident()  # not the loop's thread
    assert retriever.last_trace is not None  # the caller's thread keeps the trace
    assert found == _ids(retriever, hashing_embedding)


def _written(path: str, hashing_embedding) -> int:
    """Write pw and tc (dimension 64) to a new index at ``path``; its version."""
    IngestionPipeline(transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)]).run(
        nodes=_nodes(["pw", "tc"])
    )
    return CorpusIndex(path).version


def test_a_batch_of_another_dimension_is_refused_before_anything_is_written(
    tmp_path, hashing_embedding, monkeypatch
) -> None:
    path = str(tmp_path / "corpus.idx")
    version = _written(path, hashing_embedding)
    monkeypatch.setattr(corpus_index_module, "write_sources", _never_called)
    nodes = _nodes(["ph", "cd"])
    for node in nodes:
        node.embedding = [1.0, 0.0, 0.0]
    with pytest.raises(
        ValueError,
        match=r"node 'ph' has an embedding of dimension 3, but the index at .*corpus\.idx holds "
        r"dimension 64: embed the nodes with the model the index was built with",
    ):
        IngestionPipeline(transformations=[CorpusIndexWriter(index_path=path)]).run(nodes=nodes)
    assert CorpusIndex(path).version == version


def test_a_query_embedding_of_another_dimension_names_both_dimensions(
    tmp_path, hashing_embedding
) -> None:
    path = str(tmp_path / "corpus.idx")
    _written(path, hashing_embedding)
    retriever = CorpusIndexMultiHopRetriever(path, embed_model=hashing_embedding)
    message = (
        r"the query embedding has dimension 3, but the index at .*corpus\.idx holds dimension "
        r"64: embed queries with the model that embedded the indexed nodes"
    )
    with pytest.raises(ValueError, match=message):
        retriever.retrieve(QueryBundle(QUESTION, embedding=[1.0, 0.0, 0.0]))


def test_repeated_node_ids_in_one_batch_are_refused_before_the_index_is_made(
    tmp_path, hashing_embedding
) -> None:
    path = tmp_path / "corpus.idx"
    pipeline = IngestionPipeline(
        transformations=[hashing_embedding, CorpusIndexWriter(index_path=str(path))]
    )
    with pytest.raises(
        ValueError,
        match=r"1 node id\(s\) occur more than once in the batch, e.g. \['pw'\]: the index holds "
        "one passage per id",
    ):
        pipeline.run(nodes=_nodes(["pw", "tc", "pw"]))
    assert not path.exists()


def test_nodes_without_text_are_written_with_a_warning_naming_them(
    tmp_path, hashing_embedding, caplog
) -> None:
    path = str(tmp_path / "corpus.idx")
    nodes = [TextNode(id_="blank", text="", metadata={"title": "Blank"}), *_nodes(["pw"])]
    with caplog.at_level(logging.WARNING):
        IngestionPipeline(
            transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)]
        ).run(nodes=nodes)
    assert "1 node(s) have no text, e.g. ['blank']" in caplog.text
    assert CorpusIndex(path).snapshot().corpus.ids == ["blank", "pw"]


def test_metadata_of_any_type_is_written_and_a_title_that_is_a_collection_is_named(
    tmp_path, hashing_embedding
) -> None:
    path = str(tmp_path / "corpus.idx")
    pipeline = IngestionPipeline(
        transformations=[hashing_embedding, CorpusIndexWriter(index_path=path)]
    )
    nodes = _nodes(["pw", "tc"])
    nodes[0].metadata.update(when=datetime.datetime(1998, 1, 1), vector=np.arange(3))
    pipeline.run(nodes=nodes)
    assert CorpusIndex(path).snapshot().corpus["pw"].title == "Polish Wedding"
    arrayed = _nodes(["ph"])
    arrayed[0].metadata["title"] = np.array(["Philadelphia", "PA"])
    with pytest.raises(
        ValueError, match=r"node 'ph': metadata\['title'\] must be a string, got ndarray"
    ):
        pipeline.run(nodes=arrayed)
    with pytest.raises(ValueError, match=r"node 'ph': metadata\['title'\] must be a string"):
        MultiHopRetriever(arrayed, embed_model=hashing_embedding)


def _never_called(*args, **kwargs):
    raise AssertionError("the core was called with a batch the writer should have refused")


def test_the_writer_merges_small_segments_as_its_merge_factor_says(tmp_path) -> None:
    rng = np.random.default_rng(0)

    def one(i: str) -> list[TextNode]:
        return [TextNode(id_=i, text=f"Page {i}.", embedding=rng.normal(size=8).tolist())]

    for factor, expected in ((0, 5), (2, 3)):  # 2: a, then bc and de merged
        writer = CorpusIndexWriter(index_path=str(tmp_path / f"idx{factor}"), merge_factor=factor)
        for i in "abcde":
            writer(one(i))
        assert CorpusIndex(writer.index_path).info()["segments"] == expected
    with pytest.raises(ValueError, match="factor must be at least 2"):
        CorpusIndexWriter(index_path=str(tmp_path / "bad"), merge_factor=1)
