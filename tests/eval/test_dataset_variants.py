"""Realistic variants of the official formats: fullwiki contexts, MuSiQue-Full's unanswerable
twins, corpus files with sentence lists or nulls, empty titles, titles in another Unicode form,
and a gold passage the chunked view cannot hold."""

from __future__ import annotations

import copy
import json
import logging
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from rag_multihop.cli import main
from rag_multihop.eval.datasets import load_dataset
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "datasets"


def _write(path: Path, data: Any, *, lines: bool = False) -> Path:
    text = "\n".join(json.dumps(r) for r in data) if lines else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


def _hotpot() -> list[dict[str, Any]]:
    return json.loads((DATA / "hotpotqa.json").read_text())


def _musique() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "musique.jsonl").read_text().splitlines()]


CORPUS = [
    {"title": "Acme Corp", "text": "Acme Corp is a company founded by Jane Roe."},
    {"title": "Jane Roe", "text": "Jane Roe is an engineer. She was born in Springfield."},
    {"title": "Springfield", "text": "Springfield is a city."},
    {"title": "Shelbyville", "text": "Shelbyville is a younger city."},
]


def test_fullwiki_context_lacking_the_gold_is_matched_by_title_in_the_corpus_file(
    tmp_path: Path,
) -> None:
    records = _hotpot()
    records[0]["context"] = [c for c in records[0]["context"] if c[0] != "Jane Roe"]
    path = _write(tmp_path / "fullwiki.json", records)
    ds = load_dataset(path, _write(tmp_path / "corpus.json", CORPUS))
    assert ds.questions[0].gold_ids == ("Acme Corp", "Jane Roe")
    assert ds.questions[1].gold_ids == ("Springfield", "Shelbyville")
    with pytest.raises(ValueError, match=r"question hp1: supporting title 'Jane Roe' is not in"):
        load_dataset(path)  # a closed corpus holds the questions' own paragraphs only


def _unanswerable_twin(record: dict[str, Any]) -> dict[str, Any]:
    """MuSiQue-Full's contrast record: same id, a supporting paragraph swapped out."""
    twin = copy.deepcopy(record)
    twin["answerable"] = False
    dropped = next(p for p in twin["paragraphs"] if p["is_supporting"])
    dropped.update(title="Decoy", paragraph_text="A decoy paragraph.", is_supporting=False)
    for step in twin["question_decomposition"]:
        if step["paragraph_support_idx"] == dropped["idx"]:
            step["paragraph_support_idx"] = None
    return twin


def test_musique_full_skips_the_unanswerable_twins_and_their_paragraphs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = _musique()
    full = [r for record in records for r in (record, _unanswerable_twin(record))]
    path = _write(tmp_path / "musique_full_dev.jsonl", full, lines=True)
    with caplog.at_level(logging.WARNING, logger="rag_multihop.eval.datasets"):
        ds = load_dataset(path)
    plain = load_dataset(DATA / "musique.jsonl")
    assert ds.questions == plain.questions
    assert ds.corpus.ids == plain.corpus.ids  # no "Decoy"
    assert "skipped 2 unanswerable" in caplog.text


def test_corpus_file_texts_may_be_sentence_lists(tmp_path: Path) -> None:
    corpus = [
        {"id": "1", "title": "Jane Roe", "text": ["Jane Roe is an engineer.", " She was born."]},
        {"id": "2", "title": "Acme Corp", "text": ["Acme Corp makes widgets."]},
    ]
    questions = _write(
        tmp_path / "q.json", [{"id": "t", "question": "?", "supporting_facts": [["Jane Roe", 0]]}]
    )
    ds = load_dataset(questions, _write(tmp_path / "wiki.json", corpus))
    assert ds.corpus["Jane Roe"].text == "Jane Roe is an engineer. She was born."


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"title": "Broken", "text": None}, "'text' must be a string or a list of sentences"),
        ({"title": None, "text": "x"}, "'title' must be a non-empty string"),
        ({"title": "", "text": "x"}, "'title' must be a non-empty string"),
    ],
)
def test_corpus_file_entries_without_a_title_or_text_name_the_corpus_file(
    entry: dict[str, Any], field: str, tmp_path: Path
) -> None:
    corpus = _write(tmp_path / "corpus.json", [*CORPUS, entry])
    questions = _write(
        tmp_path / "q.json", [{"id": "t", "question": "?", "supporting_facts": ["Acme Corp"]}]
    )
    with pytest.raises(ValueError, match=rf"corpus.json: corpus entry 4: field {field}"):
        load_dataset(questions, corpus)


def test_an_empty_title_in_a_question_file_names_the_question_and_field(tmp_path: Path) -> None:
    records = _hotpot()
    records[1]["context"][2][0] = ""
    with pytest.raises(ValueError, match=r"question hp2: field 'context\[2\]' has an empty title"):
        load_dataset(_write(tmp_path / "h.json", records))
    musique = _musique()
    musique[1]["paragraphs"][0]["title"] = ""
    with pytest.raises(
        ValueError, match=r"question 3hop1__3_4_5: field 'paragraphs\[0\].title' is empty"
    ):
        load_dataset(_write(tmp_path / "m.jsonl", musique, lines=True))


def test_titles_match_across_unicode_forms_and_invisible_characters_are_hinted(
    tmp_path: Path,
) -> None:
    cities = [{"title": "Besançon", "text": "In France."}, {"title": "Zürich", "text": "A city."}]
    corpus = _write(tmp_path / "c.json", cities)
    decomposed = unicodedata.normalize("NFD", "Besançon")
    questions = _write(
        tmp_path / "q.json", [{"id": "q1", "question": "?", "supporting_facts": [decomposed]}]
    )
    assert load_dataset(questions, corpus).questions[0].gold_ids == ("Besançon",)
    hidden = _write(
        tmp_path / "z.json", [{"id": "q2", "question": "?", "supporting_facts": ["Zü\u200brich"]}]
    )
    with pytest.raises(ValueError, match=r"question q2: .* did you mean \['Zürich'\]"):
        load_dataset(hidden, corpus)


def test_chunked_view_of_a_gold_passage_without_words_names_the_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("work started before the view was checked")

    monkeypatch.setattr("rag_multihop.eval.harness.build_context", refuse)
    records = _musique()
    records[0]["paragraphs"][0]["paragraph_text"] = "  "  # Ann Lee, a gold passage
    path = _write(tmp_path / "blank_gold.jsonl", records, lines=True)
    argv = ["bench", "--questions", str(path), "--view", "chunked", "--methods", "dense",
            "--out", str(tmp_path / "out"), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "blank_gold: question 2hop__1_2: gold passages ['Ann Lee'] hold no words" in err
    assert "chunked view" in err
