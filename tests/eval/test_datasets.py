"""Dataset loaders: every format from tiny handwritten fixtures, bad input, and the shared sets."""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rag_multihop.eval.datasets import DATASETS, FORMATS, load_dataset, load_named
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "datasets"


def write_json(path: Path, data: Any, *, compress: bool = False, lines: bool = False) -> Path:
    text = "\n".join(json.dumps(r) for r in data) if lines else json.dumps(data)
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return path


def read_fixture(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def musique_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "musique.jsonl").read_text().splitlines()]


# --- formats ------------------------------------------------------------------------------------


def test_hotpotqa_closed_corpus_joins_sentences_and_dedupes() -> None:
    ds = load_dataset(DATA / "hotpotqa.json")
    assert ds.source_format == "hotpotqa"
    assert ds.name == "hotpotqa"
    assert ds.corpus.ids == ["Acme Corp", "Jane Roe", "Springfield", "Shelbyville"]
    # Sentences carry their own spaces (and one is split mid-quote): joined with "" as given.
    assert ds.corpus["Acme Corp"].text == (
        'Acme Corp is a company founded by Jane Roe. It makes "Widgets!" and gadgets.'
    )
    assert ds.corpus["Acme Corp"].title == "Acme Corp"
    first, second = ds.questions
    assert first.gold_ids == ("Acme Corp", "Jane Roe")  # distinct, in supporting-fact order
    assert (first.type, first.hop_ordered, first.answers) == ("bridge", False, ("Springfield",))
    assert first.metadata["level"] == "hard"
    assert "context" not in first.metadata
    assert second.gold_ids == ("Springfield", "Shelbyville")
    assert second.type == "comparison"


def test_2wiki_official_inserts_spaces_between_sentences() -> None:
    ds = load_dataset(DATA / "2wiki_official.json")
    assert ds.source_format == "2wikimultihopqa"
    assert ds.corpus["Foo (film)"].text == "Foo is a 1999 film. It was directed by John Doe."
    (q,) = ds.questions
    assert (q.id, q.type, q.gold_ids) == ("w1", "compositional", ("Foo (film)", "John Doe"))
    assert q.metadata["evidences"][0] == ["Foo", "director", "John Doe"]


def test_musique_jsonl_orders_gold_by_decomposition_and_numbers_duplicate_titles() -> None:
    ds = load_dataset(DATA / "musique.jsonl")
    assert ds.source_format == "musique"
    assert ds.corpus.ids == ["Ann Lee", "Mercury", "Blue Sky", "Mercury#2", "Orbit Ltd", "Cygnia"]
    assert ds.corpus["Mercury"].text == "Mercury is a planet."
    assert ds.corpus["Mercury#2"].title == "Mercury"
    first, second = ds.questions
    assert first.gold_ids == ("Blue Sky", "Ann Lee")  # decomposition order, not paragraph order
    assert first.hop_ordered and first.type == "2hop"
    assert first.answers == ("Ann Lee", "A. Lee")
    assert second.gold_ids == ("Orbit Ltd", "Mercury#2", "Cygnia")
    assert second.type == "3hop1"
    assert second.metadata["answerable"] is True


def test_musique_json_list_with_separate_corpus_matches_gold_by_title_and_text(
    tmp_path: Path,
) -> None:
    questions = write_json(tmp_path / "q.json", musique_records())
    corpus = write_json(
        tmp_path / "c.json",
        [
            {"title": "Mercury", "text": "Mercury is a Roman god."},
            {"title": "Cygnia", "text": "The capital of Cygnia is Vela."},
            {"title": "Mercury", "text": "Mercury is a planet."},
            {
                "title": "Orbit Ltd",
                "text": "Orbit Ltd was founded by Mercury Smith, known as Mercury.",
            },
            {"title": "Ann Lee", "text": "Ann Lee founded Sun Records."},
            {"title": "Blue Sky", "text": "Blue Sky was released by Sun Records."},
            {"title": "Extra", "text": "A passage no question uses."},
        ],
    )
    ds = load_dataset(questions, corpus)
    assert len(ds.corpus) == 7
    assert ds.corpus["Mercury"].text == "Mercury is a Roman god."
    assert ds.questions[1].gold_ids == ("Orbit Ltd", "Mercury", "Cygnia")


def test_titles_format_with_corpus_file() -> None:
    ds = load_dataset(DATA / "titles_questions.json", DATA / "titles_corpus.json")
    assert ds.source_format == "titles"
    assert len(ds.corpus) == 4
    first, second = ds.questions
    assert first.gold_ids == ("Moon Song", "Kari Nordmann")
    assert first.answers == ("Oslo", "Christiania")  # answer first, aliases deduplicated
    assert first.type is None and not first.hop_ordered
    assert second.gold_ids == ("Moon Song", "Sun Song")


def test_native_format_uses_its_own_ids_and_fields() -> None:
    ds = load_dataset(DATA / "native.json")
    assert (ds.name, ds.source_format, ds.corpus.ids) == (
        "tiny-native",
        "native",
        ["p1", "p2", "p3"],
    )
    first, second = ds.questions
    assert first.gold_ids == ("p1", "p2", "p3")
    assert (first.hop_ordered, first.type) == (True, "3hop")
    assert first.answers == ("London", "London, England")
    assert dict(first.metadata) == {"source": "handwritten"}
    assert (second.hop_ordered, second.type, second.answers) == (False, None, ("Charles Babbage",))
    assert load_dataset(DATA / "native.json", name="renamed").name == "renamed"


def test_gzip_is_detected_by_magic_bytes_not_extension(tmp_path: Path) -> None:
    records = read_fixture("hotpotqa.json")
    gzipped = write_json(tmp_path / "plain_name.json", records, compress=True)
    not_gzipped = write_json(tmp_path / "looks_compressed.json.gz", records)
    expected = load_dataset(DATA / "hotpotqa.json")
    for path in (gzipped, not_gzipped):
        ds = load_dataset(path)
        assert ds.corpus.ids == expected.corpus.ids
        assert ds.questions == expected.questions


def test_json_list_and_json_lines_load_the_same(tmp_path: Path) -> None:
    records = musique_records()
    as_list = load_dataset(write_json(tmp_path / "a.json", records))
    as_lines_gz = load_dataset(
        write_json(tmp_path / "b.jsonl.gz", records, lines=True, compress=True)
    )
    assert as_list.questions == as_lines_gz.questions
    assert as_list.corpus.ids == as_lines_gz.corpus.ids
    assert as_lines_gz.name == "b"


def test_single_jsonl_record_is_a_one_question_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "one.jsonl", musique_records()[:1], lines=True)
    assert len(load_dataset(path).questions) == 1


def test_limit_keeps_first_questions_and_builds_closed_corpus_from_them() -> None:
    ds = load_dataset(DATA / "hotpotqa.json", limit=1)
    assert [q.id for q in ds.questions] == ["hp1"]
    assert ds.corpus.ids == ["Acme Corp", "Jane Roe", "Springfield"]
    assert len(load_dataset(DATA / "native.json", limit=1).corpus) == 3  # native corpus is kept
    with pytest.raises(ValueError, match="limit must be a positive integer, got 0"):
        load_dataset(DATA / "hotpotqa.json", limit=0)


def test_context_format_with_corpus_file_tolerates_whitespace_differences(tmp_path: Path) -> None:
    corpus = write_json(
        tmp_path / "corpus.json",
        [
            {"title": "Jane Roe", "text": "Jane Roe is an engineer.  She was born in Springfield."},
            {"title": "Acme Corp", "text": "Unrelated text: the only Acme Corp, matched by title."},
            {"title": "Springfield", "text": "Springfield is a city."},
            {"title": "Shelbyville", "text": "Shelbyville is a younger city."},
        ],
    )
    ds = load_dataset(DATA / "hotpotqa.json", corpus)
    assert ds.corpus.ids[0] == "Jane Roe"
    assert ds.questions[0].gold_ids == ("Acme Corp", "Jane Roe")


def test_loading_is_deterministic_and_results_are_frozen() -> None:
    a = load_dataset(DATA / "musique.jsonl")
    b = load_dataset(DATA / "musique.jsonl")
    assert a.corpus.ids == b.corpus.ids and a.questions == b.questions
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.questions[0].gold_ids = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.questions[0].metadata["answerable"] = False  # type: ignore[index]


# --- ids and gold matching ----------------------------------------------------------------------


def test_duplicate_titles_get_numbered_ids_that_avoid_existing_titles(tmp_path: Path) -> None:
    corpus = write_json(
        tmp_path / "c.json",
        [
            {"title": "A", "text": "first A"},
            {"title": "A", "text": "second A"},
            {"title": "A#2", "text": "a title that looks like an id"},
            {"title": "A", "text": "third A"},
            {"title": "B", "text": "b"},
        ],
    )
    questions = write_json(
        tmp_path / "q.json", [{"id": "q", "question": "b?", "supporting_facts": ["B"]}]
    )
    ds = load_dataset(questions, corpus)
    assert ds.corpus.ids == ["A", "A#3", "A#2", "A#4", "B"]
    assert ds.corpus["A#4"].text == "third A"


def test_ambiguous_gold_title_without_text_raises(tmp_path: Path) -> None:
    corpus = write_json(
        tmp_path / "c.json", [{"title": "A", "text": "x"}, {"title": "A", "text": "y"}]
    )
    questions = write_json(
        tmp_path / "q.json", [{"id": "q7", "question": "a?", "supporting_facts": ["A"]}]
    )
    with pytest.raises(ValueError, match=r"question q7: gold title 'A' is ambiguous"):
        load_dataset(questions, corpus)


def test_titles_match_case_sensitively_with_a_hint(tmp_path: Path) -> None:
    corpus = write_json(
        tmp_path / "c.json",
        [{"title": "Red Dwarf", "text": "A TV series."}, {"title": "Red dwarf", "text": "A star."}],
    )
    ok = write_json(
        tmp_path / "ok.json", [{"id": "q1", "question": "?", "supporting_facts": ["Red dwarf"]}]
    )
    assert load_dataset(ok, corpus).questions[0].gold_ids == ("Red dwarf",)
    bad = write_json(
        tmp_path / "bad.json", [{"id": "q2", "question": "?", "supporting_facts": ["red dwarf"]}]
    )
    with pytest.raises(
        ValueError,
        match=r"question q2: gold passage 'red dwarf' is not in the corpus.*did you mean",
    ):
        load_dataset(bad, corpus)


def test_gold_title_not_in_corpus_names_question_and_title(tmp_path: Path) -> None:
    questions = write_json(
        tmp_path / "q.json", [{"id": "q9", "question": "?", "supporting_facts": ["Atlantis"]}]
    )
    with pytest.raises(
        ValueError, match=r"question q9: gold passage 'Atlantis' is not in the corpus"
    ):
        load_dataset(questions, DATA / "titles_corpus.json")


def test_supporting_title_outside_own_context_raises(tmp_path: Path) -> None:
    records = read_fixture("2wiki_official.json")
    records[0]["supporting_facts"].append(["Nowhere", 0])
    with pytest.raises(
        ValueError, match=r"question w1: supporting title 'Nowhere' is not in its own"
    ):
        load_dataset(write_json(tmp_path / "w.json", records))


def test_question_without_gold_raises_or_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = read_fixture("titles_questions.json")
    records[1]["supporting_facts"] = []
    path = write_json(tmp_path / "q.json", records)
    with pytest.raises(ValueError, match=r"question t2 has no gold passages.*allow_no_gold=True"):
        load_dataset(path, DATA / "titles_corpus.json")
    with caplog.at_level(logging.WARNING, logger="rag_multihop.eval.datasets"):
        ds = load_dataset(path, DATA / "titles_corpus.json", allow_no_gold=True)
    assert [q.id for q in ds.questions] == ["t1"]
    assert "t2" in caplog.text


def test_musique_without_supporting_paragraphs_has_no_gold(tmp_path: Path) -> None:
    records = musique_records()
    for paragraph in records[0]["paragraphs"]:
        paragraph["is_supporting"] = False
    path = write_json(tmp_path / "m.json", records)
    with pytest.raises(ValueError, match="question 2hop__1_2 has no gold"):
        load_dataset(path)
    assert [q.id for q in load_dataset(path, allow_no_gold=True).questions] == ["3hop1__3_4_5"]


def test_musique_decomposition_mismatch_keeps_paragraph_order_unordered(tmp_path: Path) -> None:
    records = musique_records()
    records[0]["question_decomposition"][0]["paragraph_support_idx"] = None
    q = load_dataset(write_json(tmp_path / "m.json", records)).questions[0]
    assert (q.gold_ids, q.hop_ordered) == (("Ann Lee", "Blue Sky"), False)


# --- bad input ----------------------------------------------------------------------------------


def test_unknown_format_lists_supported_formats_and_seen_keys(tmp_path: Path) -> None:
    path = write_json(tmp_path / "x.json", [{"query": "?", "docs": []}])
    with pytest.raises(ValueError, match=r"keys \['docs', 'query'\]") as info:
        load_dataset(path)
    assert all(fmt in str(info.value) for fmt in FORMATS)


def test_missing_empty_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_dataset(tmp_path / "nope.json")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(ValueError, match="is empty"):
        load_dataset(tmp_path / "empty.json")
    with pytest.raises(ValueError, match="empty list"):
        load_dataset(write_json(tmp_path / "list.json", []))
    (tmp_path / "broken.jsonl").write_text('{"id": 1}\n{"id": \n')
    with pytest.raises(ValueError, match="neither JSON.*line 2"):
        load_dataset(tmp_path / "broken.jsonl")
    with pytest.raises(ValueError, match="corpus entry 0 has keys"):
        load_dataset(
            DATA / "titles_questions.json", write_json(tmp_path / "c.json", [{"name": "x"}])
        )


def test_titles_format_needs_a_corpus_and_native_refuses_one() -> None:
    with pytest.raises(ValueError, match="need a corpus file"):
        load_dataset(DATA / "titles_questions.json")
    with pytest.raises(ValueError, match="without corpus_path"):
        load_dataset(DATA / "native.json", DATA / "titles_corpus.json")


def test_native_gold_id_must_exist_and_question_ids_must_be_unique(tmp_path: Path) -> None:
    data = read_fixture("native.json")
    data["questions"][1]["gold_ids"] = ["p9"]
    with pytest.raises(ValueError, match=r"question n2: gold ids \['p9'\]"):
        load_dataset(write_json(tmp_path / "a.json", data))
    data = read_fixture("native.json")
    data["questions"][1]["id"] = "n1"
    with pytest.raises(ValueError, match=r"duplicate question ids, e.g. \['n1'\]"):
        load_dataset(write_json(tmp_path / "b.json", data))


# --- named sets ---------------------------------------------------------------------------------


def test_load_named_errors_come_from_the_registry(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown dataset 'nope'") as info:
        load_named("nope", tmp_path)
    assert all(name in str(info.value) for name in DATASETS)
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        load_named("2wiki", tmp_path)


def test_shared_2wiki(shared_datasets: Path) -> None:
    ds = load_named("2wiki", shared_datasets)
    assert (len(ds.corpus), len(ds.questions), ds.source_format) == (6119, 1000, "titles")
    assert Counter(len(q.gold_ids) for q in ds.questions) == {2: 765, 4: 235}


def test_shared_hotpotqa_and_musique(shared_datasets: Path) -> None:
    hotpot = load_named("hotpotqa-500", shared_datasets)
    assert (len(hotpot.corpus), len(hotpot.questions)) == (4937, 500)
    assert {len(q.gold_ids) for q in hotpot.questions} == {2}
    assert {q.type for q in hotpot.questions} == {"bridge", "comparison"}
    musique = load_named("musique-train-100", shared_datasets)
    assert (len(musique.corpus), len(musique.questions)) == (1890, 100)
    assert {len(q.gold_ids) for q in musique.questions} == {2, 3, 4}
    assert all(q.hop_ordered for q in musique.questions)
