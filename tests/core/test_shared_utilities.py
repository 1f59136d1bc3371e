"""The utilities every method shares: text keys and the mention index, the JSON/JSONL
reader, passage/query vectors, the dataset-format registry and the CLI's data folder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Passage, Query
from rag_multihop.eval.datasets import FORMATS, DatasetFormat, load_dataset, register_format
from rag_multihop.eval.datasets.base import _FORMATS, build_corpus, resolve_gold
from rag_multihop.io import read_json, read_records
from rag_multihop.text import MentionIndex, normalize_entity, title_key, word_tokens
from rag_multihop.vectors import PassageVectors


def test_mention_index_finds_whole_token_runs_in_order_once():
    index = MentionIndex(
        [(["New", "York"], "ny"), (["York"], "york"), (["New", "York"], "ny"), ([], "empty")]
    )
    assert len(index) == 2
    assert index.find(word_tokens("York, then New York and New Yorkers")) == ["york", "ny"]
    assert index.find([]) == []
    keyed = MentionIndex([(title_key("The Beatles (band)").split(), 0)])
    assert keyed.find(normalize_entity("Beatles' songs").split()) == [0]


def test_read_json_handles_gzip_jsonl_and_names_the_bad_line(tmp_path: Path):
    path = tmp_path / "x.data"  # the name says nothing about the format
    path.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    assert read_json(path) == [{"a": 1}, {"a": 2}]
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ValueError, match=r"x.data is neither JSON .* \(line 2: "):
        read_json(path)
    with pytest.raises(FileNotFoundError, match="pairs file not found: .*nope"):
        read_json(tmp_path / "nope", what="pairs file")
    path.write_text(json.dumps({"only": "one"}))
    assert read_records(path) == [{"only": "one"}]
    path.write_text("3")
    with pytest.raises(ValueError, match="must hold a JSON list or JSON Lines of records"):
        read_records(path)


def test_passage_vectors_prefer_stored_then_given_then_encoded(hashing_encoder):
    stored = np.array([[1.0] + [0.0] * (hashing_encoder.dim - 1)])
    vectors = PassageVectors(hashing_encoder, ids=["s"], vectors=stored)
    given = {"g": np.arange(hashing_encoder.dim, dtype=float), "s": np.ones(hashing_encoder.dim)}
    passages = [Passage("e", "encoded text"), Passage("s", "x"), Passage("g", "y")]
    calls = hashing_encoder.calls
    rows = vectors.passages(passages, given=given)
    assert hashing_encoder.calls == calls + 1
    np.testing.assert_allclose(rows[1], stored[0])  # stored wins over given
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    vectors.passages([Passage("e2", "encoded text")])
    assert hashing_encoder.calls == calls + 1  # remembered by text
    with pytest.raises(ValueError, match=r"vectors given for \['g'\] have dimension 2, expected"):
        vectors.passages([Passage("g", "y")], given={"g": [1.0, 0.0]})
    bare = PassageVectors(ids=["s"], vectors=stored, hint="store them first")
    with pytest.raises(
        ValueError, match=r"1 passage\(s\) are not stored in this store.*\['e'\]; store"
    ):
        bare.passages([Passage("e", "text")])


def test_query_vectors_batch_the_texts_without_an_embedding(hashing_encoder):
    vectors = PassageVectors(hashing_encoder)
    with_embedding = Query("q", embedding=np.full(hashing_encoder.dim, 2.0))
    calls = hashing_encoder.calls
    rows = vectors.queries([Query("first text"), with_embedding, Query("second text")])
    assert hashing_encoder.calls == calls + 1 and rows.shape == (3, hashing_encoder.dim)
    raw = vectors.queries([with_embedding], normalize=False)
    assert raw[0][0] == 2.0 and np.isclose(np.linalg.norm(rows[1]), 1.0)
    with pytest.raises(ValueError, match="query embeddings have dimension 3, expected"):
        vectors.query(Query("q", embedding=np.ones(3)))
    with pytest.raises(ValueError, match=r"1 query text\(s\) have no embedding and no encoder"):
        PassageVectors().query(Query("text"))


def test_a_registered_format_is_detected_and_read(tmp_path: Path):
    def read(data, *, source, corpus_entries, limit, allow_no_gold):
        corpus = build_corpus([(d["doc"], d["body"]) for d in data["items"]])
        from rag_multihop.eval.datasets.base import RawQuestion

        raw = [
            RawQuestion(str(i), d["ask"], (), ((d["doc"], d["body"]),), False, None, {}, ())
            for i, d in enumerate(data["items"][:limit])
        ]
        return corpus, resolve_gold(raw, corpus, allow_no_gold)

    fmt = DatasetFormat(
        "toy", "an object with items", lambda data: isinstance(data, dict) and "items" in data, read
    )
    register_format(fmt)
    try:
        assert list(FORMATS)[-1] == "toy"
        path = tmp_path / "toy.json"
        path.write_text(json.dumps({"items": [{"doc": "A", "body": "a", "ask": "What is A?"}]}))
        dataset = load_dataset(path)
        assert (dataset.source_format, dataset.questions[0].gold_ids) == ("toy", ("A",))
    finally:
        _FORMATS.pop("toy")


def test_cli_data_folder_comes_from_the_flag_then_the_environment(tmp_path, monkeypatch):
    from rag_multihop.cli.common import data_dir

    assert data_dir(tmp_path) == tmp_path
    monkeypatch.setenv("RAG_MULTIHOP_DATA", str(tmp_path / "env"))
    assert data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("RAG_MULTIHOP_DATA")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"no data folder: pass --data-dir or set \$RAG_MULTIHOP"):
        data_dir(None)
