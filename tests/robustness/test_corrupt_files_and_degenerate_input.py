"""Corrupt files fail at load with the file named (or, for cache shards, are skipped and
recomputed); degenerate queries and corpora get a defined result (docs/guarantees.md)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop._atomic import ArtifactError, artifact_path
from rag_multihop.encoders.cache import CachedEncoder
from rag_multihop.graph import EntityGraph, build_entity_graph
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.llm.cache import LLMCache

CORPUS = Corpus(
    [
        Passage("a", "Marit Hallendor founded Veldmark Ropeworks.", title="Veldmark Ropeworks"),
        Passage("b", "Marit Hallendor was born in the Merrin Valley.", title="Marit Hallendor"),
        Passage("c", "The Merrin Valley lies north of Ostby.", title="Merrin Valley"),
    ]
)


class Counting:
    name, dim = "counting-test", 4

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts, *, show_progress=False):
        self.encoded += list(texts)
        out = np.ones((len(texts), 4), dtype=np.float32)
        return out / 2.0


def _shards(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "counting-test").glob("shard-*.npz"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),  # truncated
        lambda p: p.write_bytes(bytes(b ^ 0xFF for b in p.read_bytes())),  # every bit flipped
        lambda p: np.savez(p.open("wb"), keys=np.array(["x", "y"]), vectors=np.ones((1, 4))),
        lambda p: np.savez(
            p.open("wb"),
            keys=np.array(["k"]),
            vectors=np.full((1, 4), np.nan, dtype=np.float32),
        ),
    ],
    ids=["truncated", "bit-flipped", "keys-vectors-disagree", "nan-rows"],
)
def test_a_damaged_cache_shard_is_skipped_named_and_recomputed(tmp_path, caplog, damage) -> None:
    CachedEncoder(Counting(), cache_dir=tmp_path).encode(["one", "two"])
    (shard,) = _shards(tmp_path)
    damage(shard)
    encoder = Counting()
    with caplog.at_level(logging.WARNING):
        vectors = CachedEncoder(encoder, cache_dir=tmp_path).encode(["one", "two"])
    assert np.isfinite(vectors).all() and vectors.shape == (2, 4)
    assert encoder.encoded == ["one", "two"]  # recomputed, not served from the bad shard
    assert shard.name in caplog.text


def _saved_index(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    DenseIndex.build(CORPUS.ids, np.eye(3, 4, dtype=np.float32)).save(folder)
    return artifact_path(folder)


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("config.json", b"\x00\xff garbage", r"config\.json is not a valid DenseIndex config"),
        ("config.json", b'{"format_version": 1, "factory": 3}', r"config\.json: 'factory'"),
        ("config.json", b"[1, 2]", r"config\.json is not a valid DenseIndex config: expected"),
        ("index.faiss", b"not faiss at all", r"index\.faiss is not a FAISS index"),
        ("ids.json", b'["a", "b"]', r"2 ids for 3 vectors"),
        ("ids.json", b'{"a": 1}', r"ids\.json must hold a JSON list"),
    ],
)
def test_a_corrupt_dense_index_fails_at_load_naming_the_file(
    tmp_path, file: str, content: bytes, message: str
) -> None:
    folder = _saved_index(tmp_path)
    (folder / file).write_bytes(content)
    with pytest.raises(ArtifactError, match=message):
        DenseIndex.load(folder)


def test_an_artifact_of_another_kind_or_version_is_named(tmp_path) -> None:
    from rag_multihop.coop import PassageStates

    folder = _saved_index(tmp_path)
    with pytest.raises(
        ArtifactError,
        match=r"config\.json holds a 'rag_multihop\.dense_index' artifact, not a "
        r"'rag_multihop\.passage_states' \(PassageStates\) one",
    ):
        PassageStates.load(folder)
    config = json.loads((folder / "config.json").read_text())
    assert (config["kind"], config["format_version"]) == ("rag_multihop.dense_index", 1)
    del config["kind"]  # as indexes saved before kinds were recorded
    (folder / "config.json").write_text(json.dumps(config))
    assert DenseIndex.load(folder).ids == CORPUS.ids
    (folder / "config.json").write_text(json.dumps({**config, "format_version": 2}))
    with pytest.raises(
        ArtifactError,
        match=r"config\.json: unsupported DenseIndex format_version 2; this version of "
        r"rag-multihop reads format_version 1",
    ):
        DenseIndex.load(folder)


def _saved_graph(tmp_path: Path) -> Path:
    folder = tmp_path / "graph"
    build_entity_graph(CORPUS).save(folder)
    return artifact_path(folder)


def test_a_corrupt_graph_fails_at_load_naming_the_file(tmp_path) -> None:
    folder = _saved_graph(tmp_path)
    meta = json.loads((folder / "graph.json").read_text())
    (folder / "graph.json").write_text("{not json")
    with pytest.raises(ArtifactError, match=r"graph\.json is not a valid EntityGraph"):
        EntityGraph.load(folder, CORPUS)
    (folder / "graph.json").write_text(json.dumps({**meta, "passage_ids": "abc"}))
    with pytest.raises(ArtifactError, match=r"'passage_ids' must be a list of strings"):
        EntityGraph.load(folder, CORPUS)
    (folder / "graph.json").write_text(json.dumps(meta))
    (folder / "graph.npz").write_bytes(b"garbage")
    with pytest.raises(ArtifactError, match=r"graph\.npz does not hold the graph"):
        EntityGraph.load(folder, CORPUS)


def test_out_of_range_sparse_indices_fail_at_load(tmp_path) -> None:
    folder = _saved_graph(tmp_path)
    with np.load(folder / "graph.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["mentions_indices"] = arrays["mentions_indices"] + 10_000
    np.savez(folder / "graph.npz", **arrays)
    with pytest.raises(ArtifactError, match=r"graph\.npz does not hold the graph"):
        EntityGraph.load(folder, CORPUS)


def test_a_file_that_is_not_sqlite_fails_when_the_llm_cache_opens(tmp_path) -> None:
    path = tmp_path / "replies.sqlite"
    path.write_bytes(b"this is not a database" * 10)
    with pytest.raises(ArtifactError, match=r"replies\.sqlite is not an SQLite database"):
        LLMCache(path)


def test_bm25_stopword_or_punctuation_queries_return_nothing() -> None:
    bm25 = BM25Retriever(CORPUS)
    assert bm25.retrieve(Query("the of and"), k=3) == []
    assert bm25.retrieve(Query("?!... --"), k=3) == []
    assert [c.id for c in bm25.retrieve(Query("Merrin Valley"), k=3)][:1] in (["c"], ["b"])


def test_bm25_over_a_corpus_of_empty_passages_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="all 2 passages are empty, punctuation or stopwords"):
        BM25Retriever(Corpus([Passage("a", "the"), Passage("b", "...")]))


def test_an_approximate_index_with_missing_slots_keeps_ids_and_scores_aligned() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    ids = [f"p{i}" for i in range(40)]
    index = DenseIndex.build(ids, vectors, factory="IVF8,Flat")
    index._index.nprobe = 1  # search one cell: fewer than k results exist
    scores, found = index.search(vectors[:3], k=30)
    for row_scores, row_ids in zip(scores, found, strict=True):
        assert len(row_scores) == len(row_ids) <= 30
        assert all(pid in ids for pid in row_ids)
        assert np.all(np.diff(row_scores) <= 1e-6)  # best first


def test_a_dense_retriever_refuses_an_index_over_other_ids() -> None:
    other = DenseIndex.build(["x", "y", "z"], np.eye(3, 4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"index was built over other passages: 3 of its ids"):
        DenseRetriever(CORPUS, other)


@pytest.mark.parametrize(
    "change",
    [{"mode": "sideways"}, {"lambda": 7.0}, {"lambda": "half"}],
)
def test_an_association_config_with_invalid_settings_fails_at_load(tmp_path, change) -> None:
    from rag_multihop.association import AssociationReranker
    from rag_multihop.association.training import TrainingConfig

    ids = [f"p{i}" for i in range(8)]
    vectors = np.random.default_rng(0).normal(size=(8, 16)).astype(np.float32)
    reranker = AssociationReranker(training=TrainingConfig(epochs=1, batch_size=4))
    reranker.fit(ids, vectors, [("p0", "p1"), ("p2", "p3")], encoder_name="test").save(
        tmp_path / "m"
    )
    config_file = artifact_path(tmp_path / "m") / "config.json"
    config = json.loads(config_file.read_text())
    config["scoring"].update(change)
    config_file.write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match=r"config\.json holds invalid settings"):
        AssociationReranker.load(tmp_path / "m")
