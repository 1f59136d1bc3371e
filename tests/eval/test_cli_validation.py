"""Every bad input to the CLI: exit 2 and one line naming the flag or the file, question and
field, before any work (no embedding, no method run)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from rag_multihop.cli import main

PASSAGES = [
    {"id": "a", "title": "Alpha Works", "text": "Alpha Works was founded by Bea Lind."},
    {"id": "b", "title": "Bea Lind", "text": "Bea Lind was born in Corvik."},
]


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command starts the benchmark or the speed runs."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("work started before the input was validated")

    monkeypatch.setattr("rag_multihop.eval.harness.build_context", refuse)
    monkeypatch.setattr("rag_multihop.eval.perf.perf_context", refuse)
    monkeypatch.setattr("rag_multihop.eval.perf.time_encoders", refuse)


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _bench(path: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["bench", "--questions", str(path), "--methods", "dense", "--out",
            str(tmp_path / "out"), "--no-progress", *extra]  # fmt: skip


def _write(tmp_path: Path, records: Any, name: str = "q.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records))
    return path


def test_an_empty_test_half_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    native = {
        "name": "one",
        "passages": PASSAGES,
        "questions": [{"id": "q1", "question": "Who?", "answer": "Bea", "gold_ids": ["a"]}],
    }
    err = _error(capsys, _bench(_write(tmp_path, native), tmp_path, "--split", "test"))
    assert "split 'test'" in err and "has no questions" in err and "1 question" in err
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_perf_queries_is_validated(
    value: str, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["perf", "--queries", value, "--data-dir", "."])
    assert exit_.value.code == 2
    assert f"--queries must be a whole number >= 1, got '{value}'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["perf", "--encode-sample", "-1"], "--encode-sample must be a whole number >= 0"),
        (["perf", "--ppr-size", "-5"], "--ppr-size must be a whole number >= 0"),
        (["bench", "--limit", "0", "--out", "x"], "--limit must be a whole number >= 1"),
        (["bench", "--ks", "0,5", "--out", "x"], "--ks must be comma-separated integers >= 1"),
        (["bench", "--ks", ",", "--out", "x"], "--ks must be comma-separated integers >= 1"),
        (["demo", "--top", "0"], "--top must be a whole number >= 1"),
    ],
)
def test_numeric_flags_name_the_flag_value_and_range(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_perf_names_empty_lists_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    err = _error(capsys, ["perf", "--datasets", " , ", "--data-dir", str(tmp_path)])
    assert "--datasets names nothing" in err


def test_bench_without_a_source_and_an_out_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    assert "give --dataset NAME or --questions FILE" in _error(capsys, ["bench", "--out", "x"])
    native = {"name": "two", "passages": PASSAGES, "questions": [
        {"id": f"q{i}", "question": "Who?", "answer": "Bea", "gold_ids": ["a"]} for i in range(2)
    ]}  # fmt: skip
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    argv = ["bench", "--questions", str(_write(tmp_path, native)), "--out", str(taken)]
    assert "--out" in (err := _error(capsys, argv)) and "is a file" in err


MUSIQUE = {
    "id": "2hop__1_2",
    "question": "Where was the founder of Alpha Works born?",
    "answer": "Corvik",
    "paragraphs": [
        {"idx": 0, "title": "Alpha Works", "paragraph_text": "Founded by Bea Lind.",
         "is_supporting": True},
        {"idx": 1, "title": "Bea Lind", "paragraph_text": "Born in Corvik.",
         "is_supporting": True},
    ],
    "question_decomposition": [{"paragraph_support_idx": 0}, {"paragraph_support_idx": 1}],
}  # fmt: skip
NO_TEXT = [MUSIQUE["paragraphs"][0], {"idx": 1, "title": "Bea Lind", "is_supporting": True}]

HOTPOT = {
    "_id": "hp1",
    "question": "Where was the founder of Alpha Works born?",
    "answer": "Corvik",
    "supporting_facts": [["Alpha Works", 0], ["Bea Lind", 0]],
    "context": [["Alpha Works", ["Founded by Bea Lind."]], ["Bea Lind", ["Born in Corvik."]]],
}
WIKI = {**HOTPOT, "_id": "wk1", "type": "compositional", "evidences": []}


def _with(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**record, **changes}


MALFORMED = [
    pytest.param(
        _with(MUSIQUE, paragraphs=NO_TEXT), "2hop__1_2", "paragraphs[1].paragraph_text",
        id="musique-no-text",
    ),
    pytest.param(
        _with(MUSIQUE, paragraphs=["Alpha"]), "2hop__1_2", "paragraphs[0]", id="musique-string"
    ),
    pytest.param(
        _with(MUSIQUE, question_decomposition=[3]), "2hop__1_2", "question_decomposition[0]",
        id="musique-step",
    ),
    pytest.param(
        _with(HOTPOT, context=[["Alpha Works"], ["Bea Lind", ["Born in Corvik."]]]),
        "hp1", "context[0]", id="hotpot-title-only",
    ),
    pytest.param(
        _with(WIKI, context=[["Alpha Works", ["Founded."]], ["Bea Lind"]]),
        "wk1", "context[1]", id="2wiki-title-only",
    ),
    pytest.param(
        _with(HOTPOT, context=[["Alpha Works", "Founded by Bea Lind."]]), "hp1", "context[0]",
        id="hotpot-sentences-a-string",
    ),
    pytest.param(
        _with(HOTPOT, supporting_facts=[[], ["Bea Lind", 0]]), "hp1", "supporting_facts[0]",
        id="hotpot-empty-fact",
    ),
    pytest.param(_with(HOTPOT, context="Alpha"), "hp1", "'context'", id="hotpot-context-str"),
    pytest.param(
        _with(HOTPOT, answer_aliases="Corvik"), "hp1", "'answer_aliases'", id="aliases-str"
    ),
]  # fmt: skip


@pytest.mark.parametrize(("record", "qid", "field"), MALFORMED)
def test_malformed_records_name_file_question_and_field(
    record: dict[str, Any],
    qid: str,
    field: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_work: None,
) -> None:
    path = _write(tmp_path, [record])
    err = _error(capsys, _bench(path, tmp_path))
    assert str(path) in err and f"question {qid}" in err and field in err


def test_malformed_native_and_broken_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    native = {"name": "n", "passages": PASSAGES, "questions": ["q1"]}
    err = _error(capsys, _bench(_write(tmp_path, native), tmp_path))
    assert "questions[0]" in err and "q.json" in err
    native = {"name": "n", "passages": PASSAGES, "questions": [
        {"id": "q1", "question": "Who?", "gold_ids": "a"}]}  # fmt: skip
    assert "question q1: field 'gold_ids'" in _error(
        capsys, _bench(_write(tmp_path, native), tmp_path)
    )
    for field, value in (("text", None), ("text", 123), ("title", ["x"]), ("id", None)):
        passage = {**PASSAGES[0], field: value}
        native = {"name": "n", "passages": [passage, PASSAGES[1]], "questions": []}
        err = _error(capsys, _bench(_write(tmp_path, native), tmp_path))
        assert f"field 'passages[0].{field}' must be a string" in err  # never "None" or "123"
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress(json.dumps([HOTPOT]).encode())[:30])
    assert "broken.json.gz is not readable" in _error(capsys, _bench(broken, tmp_path))
    latin = tmp_path / "latin.json"
    latin.write_bytes('[{"question": "caf\xe9"}]'.encode("latin-1"))
    assert "latin.json is not readable" in _error(capsys, _bench(latin, tmp_path))


def test_perf_checks_options_before_timing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    hotpot = tmp_path / "hotpotqa" / "hotpot_dev_distractor_500.json.gz"
    hotpot.parent.mkdir()
    hotpot.write_bytes(gzip.compress(json.dumps([HOTPOT]).encode()))
    argv = ["perf", "--datasets", "hotpotqa-500", "--data-dir", str(tmp_path), "--option",
            "aar_lamda=0.5", "--encoders", "minilm"]  # fmt: skip
    assert "aar_lamda" in _error(capsys, argv)


def test_methods_all_leaves_out_the_methods_that_need_an_llm_unless_one_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from rag_multihop.cli.common import method_names
    from rag_multihop.eval.methods import available_methods

    needing = {name for name, spec in available_methods().items() if "llm" in spec.requires}
    tuned = {name for name, spec in available_methods().items() if "test-split" in spec.requires}
    assert {"uar", "coop"} <= needing and {"dense-ft", "rala-ft"} <= tuned
    without = method_names(argparse.Namespace(methods="all", option=[]))
    assert not (needing | tuned) & set(without) and "multihop" in without
    err = capsys.readouterr().err
    assert "'all' leaves out" in err and "coop (--llm)" in err and "dense-ft (--split test)" in err
    for given in ({"llm": "openai/x", "option": []}, {"option": [("llm", "openai/x")]}):
        chosen = set(method_names(argparse.Namespace(methods="all", split="test", **given)))
        assert needing | tuned <= chosen
    assert "coop" in method_names(argparse.Namespace(methods="coop,dense", option=[]))
