from __future__ import annotations

import json

import pytest

from rag_multihop.cli import main

NATIVE = {
    "name": "tiny",
    "passages": [
        {"id": "a", "title": "Alpha Works", "text": "Alpha Works was founded by Bea Lind."},
        {"id": "b", "title": "Bea Lind", "text": "Bea Lind was born in Corvik."},
        {"id": "c", "title": "Corvik", "text": "Corvik is a port on the Dun river."},
    ],
    "questions": [
        {
            "id": "q1",
            "question": "Where was the founder of Alpha Works born?",
            "answer": "Corvik",
            "gold_ids": ["a", "b"],
            "hop_ordered": True,
            "type": "bridge",
        },
    ],
}


def test_methods_lists_dense_and_bm25(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "dense" in out and "bm25" in out


def test_bench_on_a_file_writes_results(tmp_path, capsys):
    questions = tmp_path / "tiny.json"
    questions.write_text(json.dumps(NATIVE))
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--questions",
            str(questions),
            "--methods",
            "dense,bm25",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-progress",
        ]
    )
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["methods"]) == {"dense", "bm25"}
    assert results["methods"]["dense"]["R@5"] == 100.0
    assert "| dense |" in capsys.readouterr().out
    assert (out / "results.md").is_file() and (out / "recall.png").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "--dataset", "nope", "--data-dir", ".", "--out", "x"], "unknown dataset 'nope'"),
        (["bench", "--questions", "missing.json", "--out", "x"], "missing.json"),
        (["bench", "--dataset", "2wiki", "--data-dir", "/nonexistent", "--out", "x"], "--data-dir"),
    ],
)
def test_bench_errors_are_one_clear_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rag-multihop: error:") and message in err


def test_bad_ks_are_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--questions", "q.json", "--out", "x", "--ks", "1,two"])
    assert "--ks must be comma-separated integers" in capsys.readouterr().err


def test_demo_defaults_to_available_representatives_and_all_means_all_that_can_run():
    import argparse

    from rag_multihop.cli.common import method_names as _method_names
    from rag_multihop.cli.demo import DEMO_METHODS
    from rag_multihop.eval.methods import available_methods

    chosen = _method_names(argparse.Namespace(methods=None), DEMO_METHODS)
    assert chosen[:3] == ["multihop", "dense", "bm25"]
    assert set(chosen) <= set(DEMO_METHODS) & set(available_methods())
    assert _method_names(argparse.Namespace(methods="all"), DEMO_METHODS) == [
        name for name, spec in available_methods().items() if not spec.requires
    ]
    assert _method_names(argparse.Namespace(methods="bm25, dense")) == ["bm25", "dense"]


def test_version_and_plain_help(capsys) -> None:
    from rag_multihop._version import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"rag-multihop {__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out


def test_every_aar_train_flag_has_help(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["aar", "train", "--help"])
    out = capsys.readouterr().out
    for text in ("epochs (default", "pairs per batch (default", "random seed (default"):
        assert text in out


def test_bench_runs_a_small_default_set_and_all_on_request():
    import argparse

    from rag_multihop.cli.bench import BENCH_METHODS
    from rag_multihop.cli.common import method_names
    from rag_multihop.eval.methods import available_methods

    chosen = method_names(argparse.Namespace(methods=None), BENCH_METHODS)
    assert chosen == [m for m in BENCH_METHODS if m in available_methods()]
    assert {"dense", "pit-boltzmann", "bridge", "aar"} <= set(chosen) and len(chosen) <= 6
    everything = method_names(argparse.Namespace(methods="all"), BENCH_METHODS)
    assert set(chosen) < set(everything)


def test_bench_view_is_applied_and_reported(tmp_path):
    questions = tmp_path / "tiny.json"
    questions.write_text(json.dumps(NATIVE))
    out = tmp_path / "out"
    argv = ["bench", "--questions", str(questions), "--methods", "dense", "--out", str(out)]
    argv += ["--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    argv += ["--view", "chunked", "--chunk-words", "6", "--chunk-overlap", "2", "--view-seed", "3"]
    assert main(argv) == 0
    dataset = json.loads((out / "results.json").read_text())["dataset"]
    assert dataset["view"] == {
        "name": "chunked",
        "seed": 3,
        "chunk_words": 6,
        "chunk_overlap": 2,
        "doc_min": 2,
        "doc_max": 5,
    }
    assert dataset["passages"] > 3 and dataset["gold_passages"] == 2


def test_bench_refuses_an_unknown_view(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--questions", "x.json", "--view", "pdf", "--out", "x"])
    assert "--view: invalid choice: 'pdf'" in capsys.readouterr().err
