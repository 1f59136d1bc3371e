from __future__ import annotations

import dataclasses
import json
import logging
import sys

import numpy as np
import pytest

from rag_multihop import Corpus, Passage
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods, get_method
from rag_multihop.eval.report import markdown_table, to_json, write_report

PASSAGES = [
    Passage(
        "ropeworks",
        "Halvorsen Ropeworks was founded by Marit Solberg.",
        title="Halvorsen Ropeworks",
    ),
    Passage("solberg", "Marit Solberg was born in the Lumme valley.", title="Marit Solberg"),
    Passage("orchard", "The Glass Orchard is a folk band from Tessaly.", title="The Glass Orchard"),
    Passage("tessaly", "Tessaly is a harbour town on the Lumme river.", title="Tessaly"),
]
QUESTIONS = (
    QAExample(
        "q1",
        "Where was the founder of Halvorsen Ropeworks born?",
        ("Lumme valley",),
        ("ropeworks", "solberg"),
        True,
        "bridge",
    ),
    QAExample(
        "q2",
        "On which river is the home town of The Glass Orchard?",
        ("Lumme",),
        ("orchard", "tessaly"),
        True,
        "bridge",
    ),
)


@pytest.fixture
def dataset() -> Dataset:
    return Dataset("toy", Corpus(PASSAGES), QUESTIONS, "native")


def test_dense_and_bm25_are_registered():
    methods = available_methods()
    assert {"dense", "bm25"} <= set(methods)
    assert methods["dense"].family == "peer"


def test_unknown_method_lists_registered_names():
    with pytest.raises(ValueError, match=r"unknown method 'nope'; choose from: .*bm25.*dense"):
        get_method("nope")


def test_benchmark_scores_every_question_with_shared_embeddings(dataset, hashing_encoder):
    result = run_benchmark(dataset, ["dense", "bm25"], encoder=hashing_encoder, ks=(1, 2, 4))
    assert hashing_encoder.calls == 2  # passages once, questions once, shared by both methods
    dense = result.methods["dense"]
    assert set(dense.recall) == {1, 2, 4}
    assert dense.recall[4] == 1.0  # the whole corpus is retrieved at k=4
    assert len(dense.latencies_ms) == 2 and np.all(dense.latencies_ms >= 0)
    assert dense.last_hop_recall[4] == 1.0
    for row in dense.candidates:
        assert [c.rank for c in row] == list(range(1, len(row) + 1))


def test_report_files_and_comparison_against_dense(dataset, hashing_encoder, tmp_path):
    result = run_benchmark(dataset, ["dense", "bm25"], encoder=hashing_encoder, ks=(2, 5, 10))
    paths = write_report(result, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["dataset"] == {
        "name": "toy",
        "format": "native",
        "questions": 2,
        "passages": 4,
        "gold_passages": 4,
        "hop_ordered_questions": 2,
        "view": {"name": "titled"},
    }
    bm25 = data["methods"]["bm25"]
    for key in ("R@2", "R@5", "R@10", "AllR@5", "latency_ms", "vs_dense"):
        assert key in bm25
    assert 0.0 <= bm25["R@5"] <= 100.0
    assert "vs_dense" not in data["methods"]["dense"]
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = markdown_table(result)
    assert table.splitlines()[0].startswith("toy: 2 questions, 4 passages")
    assert "| dense |" in table and "| bm25 |" in table


def test_report_by_question_type_and_rankings_file(dataset, hashing_encoder, tmp_path):
    typed = Dataset(
        "toy",
        dataset.corpus,
        (dataclasses.replace(QUESTIONS[0], type="comparison"), QUESTIONS[1]),
        "native",
    )
    result = run_benchmark(typed, ["dense"], encoder=hashing_encoder, ks=(2, 5))
    paths = write_report(result, tmp_path / "out")
    by_type = json.loads(paths["json"].read_text())["by_type"]
    assert {name: row["questions"] for name, row in by_type.items()} == {
        "bridge": 1,
        "comparison": 1,
    }
    dense = result.methods["dense"]
    assert by_type["bridge"]["methods"]["dense"]["R@2"] == round(
        100 * float(dense.per_question_recall[2][1]), 1
    )
    assert set(by_type["comparison"]["methods"]["dense"]) == {"R@2", "R@5", "AllR@5"}
    assert "By question type (R@2 / R@5 / AllR@5)" in paths["markdown"].read_text()
    lines = [json.loads(line) for line in paths["rankings"].read_text().splitlines()]
    assert [(r["id"], r["type"], r["gold"]) for r in lines] == [
        ("q1", "comparison", ["ropeworks", "solberg"]),
        ("q2", "bridge", ["orchard", "tessaly"]),
    ]
    assert lines[0]["top"]["dense"] == dense.rankings[0][:10]


def test_untyped_questions_give_no_type_table(dataset, hashing_encoder):
    untyped = Dataset(
        "toy",
        dataset.corpus,
        tuple(dataclasses.replace(q, type=None) for q in QUESTIONS),
        "native",
    )
    result = run_benchmark(untyped, ["dense"], encoder=hashing_encoder, ks=(2, 5))
    assert to_json(result)["by_type"] == {}  # one gold count: no groups
    assert "By question" not in markdown_table(result)


def test_untyped_questions_are_grouped_by_gold_count_when_it_varies(dataset, hashing_encoder):
    three = dataclasses.replace(
        QUESTIONS[0], type=None, gold_ids=("ropeworks", "solberg", "tessaly"), hop_ordered=False
    )
    untyped = Dataset(
        "toy", dataset.corpus, (three, dataclasses.replace(QUESTIONS[1], type=None)), "native"
    )
    result = run_benchmark(untyped, ["dense"], encoder=hashing_encoder, ks=(2, 5))
    groups = to_json(result)["by_type"]
    assert {name: row["questions"] for name, row in groups.items()} == {"2 gold": 1, "3 gold": 1}
    assert "By question gold count (R@2 / R@5 / AllR@5)" in markdown_table(result)


def test_percentages_match_hand_computation(dataset, hashing_encoder):
    result = run_benchmark(dataset, ["dense"], encoder=hashing_encoder, ks=(1,))
    rankings = result.methods["dense"].rankings
    expected = np.mean(
        [len({r[0]} & set(q.gold_ids)) / 2 for r, q in zip(rankings, QUESTIONS, strict=True)]
    )
    assert to_json(result)["methods"]["dense"]["R@1"] == round(100 * expected, 2)


def test_benchmark_rejects_bad_arguments(dataset, hashing_encoder):
    with pytest.raises(ValueError, match="no methods"):
        run_benchmark(dataset, [], encoder=hashing_encoder)
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        run_benchmark(dataset, ["dense"], encoder=hashing_encoder, ks=(0, 5))
    with pytest.raises(ValueError, match="unknown method"):
        run_benchmark(dataset, ["dense", "nope"], encoder=hashing_encoder)
    assert hashing_encoder.calls == 0  # names are checked before anything is embedded


def test_an_unknown_option_is_refused_before_anything_runs(dataset, hashing_encoder):
    with pytest.raises(
        ValueError, match=r"unknown --option 'aar_lamda' \(did you mean 'aar_lambda'\?\)"
    ):
        run_benchmark(dataset, ["dense"], encoder=hashing_encoder, options={"aar_lamda": "0.3"})
    assert hashing_encoder.calls == 0  # refused before embedding
    known = {"aar_lambda": "0.3", "graph_ppr": "push", "bm25_stemmer": "none", "llm": "local"}
    result = run_benchmark(dataset, ["dense"], encoder=hashing_encoder, options=known)
    assert "dense" in result.methods


def test_tune_and_test_halves_are_fixed_disjoint_and_complete(dataset):
    from rag_multihop.eval.splits import split_dataset

    tune, test = split_dataset(dataset, "tune"), split_dataset(dataset, "test")
    tune_ids, test_ids = {q.id for q in tune.questions}, {q.id for q in test.questions}
    assert not tune_ids & test_ids
    assert tune_ids | test_ids == {q.id for q in dataset.questions}
    assert abs(len(tune_ids) - len(test_ids)) <= 1
    assert {q.id for q in split_dataset(dataset, "tune").questions} == tune_ids  # seeded
    assert tune.corpus is dataset.corpus and split_dataset(dataset, "all") is dataset
    with pytest.raises(ValueError, match="split must be one of all, tune, test, got 'dev'"):
        split_dataset(dataset, "dev")


def test_report_without_matplotlib_writes_the_results_and_warns(
    dataset, hashing_encoder, tmp_path, monkeypatch, caplog
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the bench extra were missing
    result = run_benchmark(dataset, ["dense"], encoder=hashing_encoder, ks=(2, 5))
    with caplog.at_level(logging.WARNING, logger="rag_multihop.eval.report"):
        paths = write_report(result, tmp_path / "out")
    assert "plot" not in paths and not (tmp_path / "out" / "recall.png").exists()
    assert json.loads(paths["json"].read_text())["methods"]["dense"]["R@5"] >= 0
    assert paths["rankings"].is_file() and paths["markdown"].is_file()
    assert "pip install 'rag-multihop[bench]'" in caplog.text
