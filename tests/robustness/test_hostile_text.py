"""Hostile passage and query content and ids: what a store holds is legitimate data (a NUL,
an emoji, a control character, a bidi mark, a 10,000-character id, a path-like id) and comes
back byte-exact, ranked as an in-memory build ranks it; what cannot be stored (a lone
surrogate, which has no UTF-8 form) is refused where it enters, naming the id and the field,
before anything is written; a look-up of such an id answers "absent", as a ``Corpus`` does."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.association.pairs import load_pairs
from rag_multihop.cli import main
from rag_multihop.encoders import CachedEncoder
from rag_multihop.index.dense import DenseIndex
from rag_multihop.io import read_json, read_records
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from rag_multihop.store.sources import SOURCES_FILE, delete_sources, write_sources
from rag_multihop.testing import HashingEncoder
from rag_multihop.validation import check_texts

SURROGATE = "\ud800"
DIM = 8

BASE = [
    Passage("rope", "Rope is a 1948 film by Alfred Hitchcock. It stars James Stewart.", "Rope"),
    Passage("ah", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
    Passage("js", "James Stewart was an American actor.", "James Stewart"),
]

HOSTILE = [
    Passage("a\x00b", "Psycho\x00 is a film by Alfred Hitchcock.\x00", "Psy\x00cho"),
    Passage("a\nb", "Vertigo is a film. It stars James\x1fStewart.", "Vertigo (1958\x1f film)"),
    Passage(
        "docs/../x\\y",
        "Cafe\u0301 Society is a band.",
        unicodedata.normalize("NFD", "Café Society"),
    ),
    Passage("c2", "Café Society is a 2016 film by Woody Allen.", "Café Society"),
    Passage("c3", "CAFÉ SOCIETY magazine reviewed Rope.", "CAFÉ SOCIETY"),
    Passage(
        "zw", "\u200dThe Birds\u200f is a film by Alfred Hitchcock \u202e.", "\u200dThe Bi\u200frds"
    ),
    Passage("\U0001f600", "\U0001f600\U0001f469\u200d\U0001f469\u200d\U0001f467", "\U0001f600"),
    Passage("marks", "\u0301\u0301\u0308", "\u0301"),
    Passage(" ", "  \t\n\u3000 ", ""),
    Passage("punct", "!?.,;:--...!!!", "!!!"),
    Passage("x" * 10_000, "Marnie (1964 film) is by Alfred Hitchcock with Sean Connery.", "Marnie"),
    Passage("ctl", "A\x01B\x1eC\x1cD\x85E\u2028F\rG Rope was remade.", "Rope\u2028(play)"),
]

QUESTIONS = [
    "Who directed Rope?",
    "Who starred in Vertigo (1958 film)?",
    "Who made Café Society?",
    "Where was Psy\x00cho made?",
    "\U0001f600",
    "Rope\u2028play remake",
]


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def _index(tmp_path: Path, passages=BASE) -> CorpusIndex:
    return CorpusIndex.build(tmp_path / "idx", passages, _vectors(len(passages)))


def _state(index: CorpusIndex) -> tuple[int, list[str], list[tuple[str, str]]]:
    snapshot = index.snapshot()
    return snapshot.version, snapshot.corpus.ids, [(p.text, p.title) for p in snapshot.corpus]


# --- legitimate data: stored, given back byte-exact, ranked as in memory ------------------------


def test_hostile_but_valid_texts_ids_and_titles_round_trip_through_every_write(tmp_path) -> None:
    index = _index(tmp_path, [*BASE, *HOSTILE[:6]])
    index.add(HOSTILE[6:], _vectors(len(HOSTILE) - 6, seed=1))
    index.upsert([HOSTILE[0]], _vectors(1, seed=2))
    index.delete([HOSTILE[1].id])
    index.upsert([HOSTILE[1]], _vectors(1, seed=3))
    for version in ("written", "compacted"):
        snapshot = index.snapshot()
        assert sorted(snapshot.corpus.ids) == sorted(p.id for p in [*BASE, *HOSTILE]), version
        for passage in [*BASE, *HOSTILE]:
            stored = snapshot.corpus[passage.id]
            assert (stored.id, stored.text, stored.title) == (
                passage.id,
                passage.text,
                passage.title,
            ), version
        retriever = MultiHopRetriever.from_index(snapshot)
        fused = graph_fusion_retriever(snapshot)
        for text in QUESTIONS:
            query = Query(text, embedding=_vectors(1, seed=4)[0])
            assert len(retriever.retrieve(query, k=5)) == 5
            assert fused.retrieve(query, k=5)
        index.compact()


def test_a_store_of_hostile_passages_ranks_as_an_in_memory_build(tmp_path) -> None:
    encoder = HashingEncoder(dim=32)
    passages = [*BASE, *HOSTILE]
    vectors = encoder.encode([p.embedding_text for p in passages])
    vectors += np.random.default_rng(0).normal(0, 1e-3, vectors.shape).astype(np.float32)
    index = CorpusIndex.build(tmp_path / "idx", passages[:6], vectors[:6])
    index.add(passages[6:], vectors[6:])
    stored = MultiHopRetriever.from_index(index.snapshot(), encoder=encoder)
    ids = [p.id for p in passages]
    fresh = MultiHopRetriever(
        Corpus(passages), vectors, index=DenseIndex.build(ids, vectors), encoder=encoder
    )
    for text in QUESTIONS:
        query = Query(text, embedding=encoder.encode([text])[0])
        ranked = [
            [(c.id, round(c.score, 9)) for c in r.retrieve(query, k=10)] for r in (stored, fresh)
        ]
        assert ranked[0] == ranked[1], text


def test_a_five_megabyte_passage_is_stored_whole(tmp_path) -> None:
    big = Passage("big", ("Alfred Hitchcock directed Rope. " * 160_000)[:5_000_000], "Big")
    index = _index(tmp_path, [*BASE, big])
    assert index.snapshot().corpus["big"].text == big.text


# --- a lone surrogate: refused where it enters, nothing written ---------------------------------


@pytest.mark.parametrize("field", ["id", "text", "title"])
def test_a_passage_refuses_a_lone_surrogate_naming_the_field(field: str) -> None:
    fields = {"id": "p1", "text": "Rope is a film.", "title": "Rope"}
    fields[field] = f"ab{SURROGATE}c"
    with pytest.raises(
        ValueError, match=rf"Passage\.{field} of passage .* lone surrogate at position 2"
    ):
        Passage(**fields)


def test_deleting_an_id_with_a_lone_surrogate_is_refused_naming_it(tmp_path) -> None:
    index = _index(tmp_path)
    before = _state(index)
    bad = f"rope{SURROGATE}"
    for call in (
        lambda: index.delete([bad]),
        lambda: index.delete(["ah", bad], missing_ok=True),
        lambda: index.upsert([Passage("new", "New text.")], _vectors(1), delete=[bad]),
    ):
        with pytest.raises(ValueError, match=r"id 'rope\\ud800' .* lone surrogate at position 4"):
            call()
    assert _state(index) == before


def test_a_snapshot_answers_an_id_that_cannot_be_stored_as_absent(tmp_path) -> None:
    corpus = _index(tmp_path).snapshot().corpus
    bad = f"rope{SURROGATE}"
    assert bad not in corpus and bad not in Corpus(BASE)
    with pytest.raises(KeyError, match="unknown passage id"):
        corpus[bad]
    with pytest.raises(KeyError, match="unknown passage id"):
        corpus.index_of(bad)


def _sources_rows(index: CorpusIndex) -> list[tuple[str, str]]:
    with sqlite3.connect(index.path / SOURCES_FILE) as connection:
        return sorted(connection.execute("SELECT passage, source FROM sources"))


def test_a_source_id_with_a_lone_surrogate_is_refused_before_any_write(tmp_path) -> None:
    index = _index(tmp_path)
    write_sources(index, [Passage("n1", "Psycho is a film.")], _vectors(1), ["a.txt"])
    before, rows = _state(index), _sources_rows(index)
    bad = f"caf{SURROGATE}.txt"  # a file name that is not UTF-8, as os.listdir gives it
    with pytest.raises(ValueError, match=r"passage 'n2': source 'caf\\ud800.txt' .* surrogate"):
        write_sources(index, [Passage("n2", "Marnie is a film.")], _vectors(1), [bad])
    with pytest.raises(ValueError, match=r"source 'caf\\ud800.txt' .* surrogate"):
        delete_sources(index, ["a.txt", bad])
    assert _state(index) == before and _sources_rows(index) == rows


# --- encoders ------------------------------------------------------------------------------------


def test_encoders_refuse_a_text_with_a_lone_surrogate_naming_it(tmp_path) -> None:
    texts = ["Who directed Rope?", f"Who{SURROGATE}?"]
    with pytest.raises(ValueError, match=r"texts\[1\] is not valid Unicode: a lone surrogate at"):
        check_texts(texts)
    with pytest.raises(ValueError, match=r"texts\[1\] is not valid Unicode"):
        CachedEncoder(HashingEncoder(), tmp_path / "cache").encode(texts)
    assert check_texts(["a\x00b", "\U0001f600", "", " "]) == ["a\x00b", "\U0001f600", "", " "]


# --- JSON Lines and the CLI ----------------------------------------------------------------------


RECORDS = [
    {"id": "rope", "text": "Rope is a film.\u2028It is by Alfred Hitchcock.", "title": "Rope"},
    {"id": "nel", "text": "A next line\x85and a paragraph\u2029separator.", "title": "A\u2028B"},
    {"id": "a\x00b\nc", "text": "NUL\x00 and \U0001f600", "title": "\u200dZ\u200f"},
]


def _json_lines(path: Path, records: list, *, ensure_ascii: bool = False) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in records), encoding="utf-8"
    )
    return path


def test_json_lines_may_hold_unicode_line_separators_unescaped(tmp_path) -> None:
    """``json.dumps(..., ensure_ascii=False)`` writes U+2028, U+2029 and U+0085 as they are:
    JSON Lines end at ``\\n`` alone."""
    path = _json_lines(tmp_path / "p.jsonl", RECORDS)
    assert read_records(path) == RECORDS
    for end in (b"\r\n", b"\r"):  # Windows and old Mac line ends
        other = tmp_path / "other.jsonl"
        other.write_bytes(path.read_bytes().replace(b"\n", end))
        assert read_json(other) == RECORDS
    pairs = _json_lines(tmp_path / "pairs.jsonl", [["a\u2028b", "c"], ["c", "d\x85e"]])
    assert load_pairs(pairs).pairs == (("a\u2028b", "c"), ("c", "d\x85e"))


def _npy(tmp_path: Path, rows: int) -> str:
    path = tmp_path / f"v{rows}.npy"
    np.save(path, _vectors(rows))
    return str(path)


def test_the_cli_builds_an_index_from_json_lines_with_any_valid_text(tmp_path, capsys) -> None:
    passages = _json_lines(tmp_path / "p.jsonl", RECORDS)
    args = ["index", "build", "--index", str(tmp_path / "idx"), "--passages", str(passages)]
    assert main([*args, "--vectors", _npy(tmp_path, 3), "--no-progress"]) == 0
    stored = {p.id: (p.text, p.title) for p in CorpusIndex(tmp_path / "idx").snapshot().corpus}
    assert stored == {r["id"]: (r["text"], r["title"]) for r in RECORDS}


def test_the_cli_names_the_file_and_record_of_a_lone_surrogate(tmp_path, capsys) -> None:
    passages = tmp_path / "p.jsonl"
    passages.write_text(
        '{"id": "rope", "text": "Rope."}\n{"id": "p2", "text": "abc\\ud800def"}\n', encoding="utf-8"
    )
    args = ["index", "build", "--index", str(tmp_path / "idx"), "--passages", str(passages)]
    assert main([*args, "--vectors", _npy(tmp_path, 2), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert f"{passages}: record 2: Passage.text of passage 'p2' is not valid Unicode" in error
    assert not (tmp_path / "idx").exists()


def test_the_cli_refuses_to_delete_an_id_with_a_lone_surrogate(tmp_path, capsys) -> None:
    index = _index(tmp_path)
    before = _state(index)
    ids = tmp_path / "ids.json"
    ids.write_text('["ah", "rope\\ud800"]', encoding="utf-8")
    args = ["index", "delete", "--index", str(index.path), "--missing-ok"]
    assert main([*args, "--ids-file", str(ids)]) == 2
    assert main([*args, "--ids", "ah,x\udcff"]) == 2  # argv bytes that are not UTF-8
    error = capsys.readouterr().err
    assert "id 'rope\\ud800' to delete is not valid Unicode" in error
    assert "id 'x\\udcff' to delete is not valid Unicode" in error
    assert _state(index) == before
