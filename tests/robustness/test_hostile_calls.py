"""Calls a user gets slightly wrong: a numpy ``k``, a bare string where a list or a Query
belongs, an index object where a snapshot was expected, a query with several vectors, a
fusion child that is no retriever. Each either works as meant or says what to change."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop import Candidate, Corpus, Passage, Query
from rag_multihop.cli import main
from rag_multihop.encoders.cache import CachedEncoder
from rag_multihop.fusion import FusionRetriever
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from rag_multihop.testing.encoders import HashingEncoder
from rag_multihop.types import rank_candidates

PASSAGES = [
    Passage("rope", "Rope is a film directed by Alfred Hitchcock.", "Rope"),
    Passage("ah", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
    Passage("psycho", "Psycho is a thriller by Alfred Hitchcock.", "Psycho"),
    Passage("jaws", "Jaws is a film about a shark.", "Jaws"),
]
VECTORS = np.eye(4, 8, dtype=np.float32) + 0.1
QUERY = Query("Who directed Rope?", embedding=VECTORS[0])


def _dense() -> DenseRetriever:
    corpus = Corpus(PASSAGES)
    return DenseRetriever(corpus, DenseIndex.build(corpus.ids, VECTORS))


@pytest.mark.parametrize("k", [np.int64(2), np.int32(2), np.uint8(2)])
def test_a_numpy_integer_k_works_like_an_int(k: np.integer) -> None:
    corpus = Corpus(PASSAGES)
    dense = _dense()
    assert [c.id for c in dense.retrieve(QUERY, k=k)] == [c.id for c in dense.retrieve(QUERY, 2)]
    assert len(BM25Retriever(corpus).retrieve(Query("Hitchcock film"), k=k)) == 2
    assert len(MultiHopRetriever(corpus, VECTORS).retrieve(QUERY, k=k)) == 2


def test_a_numpy_k_searches_a_persistent_index(tmp_path) -> None:
    index = CorpusIndex.build(tmp_path / "idx", PASSAGES, VECTORS)
    index.delete(["jaws"])  # a version with a tombstone: the segmented search
    fusion = graph_fusion_retriever(index.snapshot())
    assert len(fusion.retrieve(QUERY, k=np.int64(2))) == 2
    _, ids = index.snapshot().dense_index.search(VECTORS[:1], np.int64(2))
    assert len(ids[0]) == 2 and "jaws" not in ids[0]


def test_the_methods_open_an_index_given_as_itself_or_as_its_path(tmp_path) -> None:
    index = CorpusIndex.build(tmp_path / "idx", PASSAGES, VECTORS)
    expected = [c.id for c in MultiHopRetriever.from_index(index.snapshot()).retrieve(QUERY, 3)]
    for source in (index, tmp_path / "idx", str(tmp_path / "idx")):
        assert [c.id for c in MultiHopRetriever.from_index(source).retrieve(QUERY, 3)] == expected
        assert graph_fusion_retriever(source).retrieve(QUERY, 3)
    with pytest.raises(TypeError, match="expected an IndexSnapshot, a CorpusIndex or an index"):
        MultiHopRetriever.from_index(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got int"):
        graph_fusion_retriever(3)  # type: ignore[arg-type]


def test_a_query_holds_one_vector() -> None:
    assert Query("q", embedding=np.ones((1, 8))).embedding is not None
    with pytest.raises(ValueError, match=r"one vector, shape \(dim,\) or \(1, dim\), got shape"):
        Query("q", embedding=np.ones((2, 8)))
    with pytest.raises(ValueError, match="one vector"):
        Query("q", embedding=np.float32(1.0))


def test_a_question_as_a_bare_string_is_refused_with_the_fix() -> None:
    dense = _dense()
    with pytest.raises(TypeError, match=r"expected a Query, got str .*Query\(text\)"):
        dense.retrieve("Who directed Rope?", k=2)  # type: ignore[arg-type]


def test_an_encoder_refuses_one_string_instead_of_reading_its_characters(tmp_path) -> None:
    encoders = [HashingEncoder(dim=8), CachedEncoder(HashingEncoder(dim=8), cache_dir=tmp_path)]
    for encoder in encoders:
        with pytest.raises(TypeError, match=r"got one str; wrap it: \['Where was he born\?'\]"):
            encoder.encode("Where was he born?")
        with pytest.raises(TypeError, match=r"texts\[1\] must be a string, got int"):
            encoder.encode(["a", 3])  # type: ignore[list-item]
        assert encoder.encode(("a b", "c")).shape == (2, 8)


@pytest.mark.parametrize("top_n", [-1, 2.5, "2", True])
def test_rank_candidates_refuses_a_top_n_that_is_no_count(top_n: object) -> None:
    found = [Candidate(p, float(i)) for i, p in enumerate(PASSAGES)]
    with pytest.raises(ValueError, match="top_n must be an integer >= 0"):
        rank_candidates(found, top_n=top_n)  # type: ignore[arg-type]
    assert rank_candidates(found, top_n=0) == []


def test_fusion_names_a_child_that_is_no_retriever() -> None:
    dense = _dense()
    with pytest.raises(TypeError, match="retriever 'graph' has no retrieve"):
        FusionRetriever({"dense": dense, "graph": 5})  # type: ignore[dict-item]


def test_cli_reports_os_errors_as_one_line(tmp_path, capsys) -> None:
    passages = tmp_path / "p.jsonl"
    passages.write_text(json.dumps({"id": "a", "text": "Rope is a film.", "title": "Rope"}))
    np.save(tmp_path / "v.npy", np.ones((1, 4), dtype=np.float32))
    args = ["index", "build", "--passages", str(passages), "--vectors", str(tmp_path / "v.npy")]
    assert main([*args, "--index", str(passages)]) == 2  # a file where the folder should be
    err = capsys.readouterr().err
    assert err.startswith("rag-multihop: error: ") and "Traceback" not in err


def test_cli_says_the_index_stores_no_metadata(tmp_path, capsys) -> None:
    passages = tmp_path / "p.jsonl"
    record = {"id": "a", "text": "Rope is a film.", "title": "Rope", "metadata": {"page": 3}}
    passages.write_text(json.dumps(record))
    np.save(tmp_path / "v.npy", np.ones((1, 4), dtype=np.float32))
    args = ["index", "build", "--passages", str(passages), "--vectors", str(tmp_path / "v.npy")]
    assert main([*args, "--index", str(tmp_path / "idx")]) == 0
    assert "the index stores no metadata (1 passage(s)" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**record, "metadata": [1]}))
    args[3] = str(bad)
    assert main([*args, "--index", str(tmp_path / "idx2")]) == 2
    assert "field 'metadata' must be an object" in capsys.readouterr().err
