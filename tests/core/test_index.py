from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.index import BM25Retriever, DenseIndex, DenseRetriever

CORPUS = Corpus(
    [
        Passage(
            "rope",
            "Halvorsen Ropeworks makes mooring ropes in Brekke.",
            title="Halvorsen Ropeworks",
        ),
        Passage("river", "The Lumme river flows through the Brekke valley.", title="Lumme"),
        Passage(
            "band", "The Glass Orchard is a folk band from Tessaly.", title="The Glass Orchard"
        ),
    ]
)


def test_flat_index_returns_exact_cosine_order():
    vectors = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    index = DenseIndex.build(["a", "b", "c"], vectors)
    scores, ids = index.search(np.array([[0, 2.0]], dtype=np.float32), k=3)  # query is normalised
    assert ids[0] == ["c", "b", "a"]
    np.testing.assert_allclose(scores[0], [1.0, 0.8, 0.0], atol=1e-6)
    same, positions = index.search_positions(np.array([[0, 2.0]], dtype=np.float32), k=3)
    assert positions[0].tolist() == [2, 1, 0] and np.array_equal(same[0], scores[0])


def test_k_larger_than_corpus_returns_everything():
    index = DenseIndex.build(["a", "b"], np.eye(2, dtype=np.float32))
    _, ids = index.search(np.eye(2, dtype=np.float32)[:1], k=50)
    assert sorted(ids[0]) == ["a", "b"]


def test_small_and_large_searches_agree_and_leave_faiss_threads_as_they_were():
    import faiss

    from rag_multihop.index.dense import SMALL_SEARCH

    rng = np.random.default_rng(0)
    index = DenseIndex.build([f"p{i}" for i in range(200)], rng.normal(size=(200, 8)))
    queries = rng.normal(size=(SMALL_SEARCH + 4, 8)).astype(np.float32)
    threads_before = faiss.omp_get_max_threads()
    _, batch_ids = index.search(queries, k=5)  # large: FAISS's own thread count
    _, small_ids = index.search(queries[:SMALL_SEARCH], k=5)  # small: one thread
    assert small_ids == batch_ids[:SMALL_SEARCH]
    assert faiss.omp_get_max_threads() == threads_before


@pytest.mark.parametrize(
    ("ids", "vectors", "message"),
    [
        ([], np.zeros((0, 2), dtype=np.float32), "zero passages"),
        (["a"], np.eye(2, dtype=np.float32), "1 ids but 2 vectors"),
        (["a", "a"], np.eye(2, dtype=np.float32), "unique"),
        (["a", "b"], np.array([[1, np.nan], [0, 1]], dtype=np.float32), r"NaN.*rows \[0\]"),
    ],
)
def test_build_rejects_bad_input(ids, vectors, message):
    with pytest.raises(ValueError, match=message):
        DenseIndex.build(ids, vectors)


def test_search_rejects_dimension_mismatch_and_bad_k():
    index = DenseIndex.build(["a", "b"], np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="dimension 3, expected 2"):
        index.search(np.ones((1, 3), dtype=np.float32), k=1)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        index.search(np.ones((1, 2), dtype=np.float32), k=0)


def test_save_load_roundtrip_and_other_factories(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    ids = [f"p{i}" for i in range(50)]
    for factory in ["Flat", "HNSW16"]:
        index = DenseIndex.build(ids, vectors, factory=factory)
        index.save(tmp_path / factory)
        loaded = DenseIndex.load(tmp_path / factory)
        s1, i1 = index.search(vectors[:3], k=5)
        s2, i2 = loaded.search(vectors[:3], k=5)
        assert i1 == i2 and loaded.factory == factory
        np.testing.assert_allclose(s1, s2)
        assert i1[0][0] == "p0"
    assert not list(tmp_path.glob(".*tmp*"))  # no staging folders left behind


def test_load_of_a_folder_that_is_not_an_index(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved DenseIndex"):
        DenseIndex.load(tmp_path)


def test_dense_retriever_gives_ranked_candidates_with_dense_signal(hashing_encoder):
    retriever = DenseRetriever.from_corpus(CORPUS, hashing_encoder)
    found = retriever.retrieve(Query("Which band is from Tessaly?"), k=2)
    assert [c.rank for c in found] == [1, 2]
    assert found[0].id == "band" and found[0].signals["dense"] == found[0].score


def test_dense_retriever_uses_a_given_query_embedding_and_checks_its_dimension(hashing_encoder):
    retriever = DenseRetriever.from_corpus(CORPUS, hashing_encoder)
    vector = hashing_encoder.encode([CORPUS["river"].embedding_text])[0]
    assert retriever.retrieve(Query("anything", embedding=vector), k=1)[0].id == "river"
    with pytest.raises(ValueError, match="dimension"):
        retriever.retrieve(Query("x", embedding=np.ones(3)), k=1)


def test_bm25_matches_terms_and_skips_passages_without_any():
    bm25 = BM25Retriever(CORPUS)
    found = bm25.retrieve(Query("ropes made in Brekke"), k=3)
    assert found[0].id == "rope" and "band" not in [c.id for c in found]
    assert found[0].signals["bm25"] > 0
    assert bm25.retrieve(Query("zzzz qqqq"), k=3) == []
