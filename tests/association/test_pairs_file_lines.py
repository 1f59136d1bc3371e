"""`load_pairs` / `aar train --pairs`: a one-line file is one pair (or session), and a
malformed record is named by its file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rag_multihop.association import AssociationReranker
from rag_multihop.association.pairs import load_pairs
from rag_multihop.cli import main
from rag_multihop.testing import HashingEncoder


@pytest.mark.parametrize("text", ['["a", "b"]', '["a", "b"]\n', '\n  ["a", "b"]  \n\n'])
def test_a_one_line_file_is_one_pair(tmp_path: Path, text: str) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(text)
    pairs = load_pairs(path)
    assert pairs.pairs == (("a", "b"),) and pairs.sources == {"one.jsonl": 1}


def test_a_one_line_session_and_a_pretty_printed_pair(tmp_path: Path) -> None:
    session = tmp_path / "session.json"
    session.write_text('["c", "a", "b"]')
    assert load_pairs(session).pairs == (("a", "c"), ("b", "c"), ("a", "b"))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(["a", "b"], indent=2))
    assert load_pairs(pretty).pairs == (("a", "b"),)
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps([["a", "b"], ["b", "c"]], indent=2))
    assert load_pairs(listed).pairs == (("a", "b"), ("b", "c"))
    compressed = tmp_path / "one.jsonl.gz"
    compressed.write_bytes(gzip.compress(b'["d", "e"]\n'))
    assert load_pairs(compressed).pairs == (("d", "e"),)


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ('["a", 3]', "line 1", "passage ids must be non-empty strings, got 3"),
        ('["a"]', "line 1", "must be a list of at least two passage ids, got ['a']"),
        ('{"a": "b"}', "line 1", "must be a list of at least two passage ids"),
        ('["a", "b"]\n\n["b", ""]\n', "line 3", "passage ids must be non-empty strings, got ''"),
        ('["a", "b"]\n"c"\n', "line 2", "must be a list of at least two passage ids, got 'c'"),
        ('["a", "b"]\n["c"]\n["d", "e"]', "line 2", "must be a list of at least two"),
        ('[["a", "b"], ["c", null]]', "record 1", "passage ids must be non-empty strings"),
        ('[\n  "a",\n  7\n]', "lines 1-4", "passage ids must be non-empty strings, got 7"),
    ],
)
def test_a_malformed_record_names_the_file_and_line(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        load_pairs(path)
    assert str(error.value).startswith(f"{path}: {where}") and problem in str(error.value)


def test_aar_train_reads_a_one_line_pairs_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    import rag_multihop.encoders as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda: HashingEncoder(name="hashing-test"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"d{i}", "text": f"text {i}"}) for i in range(4)))
    pair = tmp_path / "pair.jsonl"
    pair.write_text('["d0", "d1"]\n')
    argv = ["aar", "train", "--corpus", str(corpus), "--pairs", str(pair), "--epochs", "1"]
    out = tmp_path / "model"
    assert main([*argv, "--out", str(out), "--cache-dir", str(tmp_path / "cache")]) == 0
    stats = AssociationReranker.load(out).provenance["pair_stats"]
    assert (stats["pairs"], stats["sources"]) == (1, {"pair.jsonl": 1})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('["d0", "d1"]\n["d2"]\n')
    argv[argv.index(str(pair))] = str(bad)
    assert main([*argv, "--out", str(tmp_path / "other")]) == 2
    assert f"{bad}: line 2 must be a list of at least two passage ids" in capsys.readouterr().err
