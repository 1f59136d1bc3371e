"""``rag-multihop perf``: every stage timed against its anchor, reported as tables and JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop.cli import main
from rag_multihop.eval import perf
from rag_multihop.eval.datasets import load_named
from rag_multihop.testing import HashingEncoder


@pytest.fixture
def hashing_default_encoder(monkeypatch):
    import rag_multihop.encoders as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda: HashingEncoder(name="hashing-perf"))


def test_perf_cli_writes_tables_and_json(
    tmp_path, shared_datasets, hashing_default_encoder, capsys
):
    out = tmp_path / "perf"
    argv = ["perf", "--datasets", "musique-train-100", "--data-dir", str(shared_datasets)]
    argv += ["--queries", "3", "--methods", "dense,bm25,graph", "--encoders", ""]
    argv += ["--ppr-size", "300", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "perf.json").read_text())
    assert (out / "perf.md").read_text() == printed
    assert report["command"].startswith("rag-multihop perf --datasets musique-train-100 ")
    rows = report["methods"]["musique-train-100"]
    assert [r["method"] for r in rows] == ["dense", "bm25", "graph"]
    assert all(r["queries"] == 3 and r["ms_p95"] >= r["ms_p50"] >= 0 for r in rows)
    assert all(r["encoded_ms_p50"] >= 0 and r["peak_memory_mib"] > 0 for r in rows)
    graphs = [r["graph"] for r in report["ppr"]]
    assert graphs == ["musique-train-100", "synthetic-300"]
    assert report["ppr"][0]["push_l1_error"] < 0.5
    assert "| dense |" in printed and "local push vs exact power iteration" in printed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--methods", "dense,nope"], "unknown method 'nope'"),
        (["--encoders", "minilm,fast"], "unknown encoder 'fast'"),
        (["--option", "graph_pprr=push"], "unknown --option 'graph_pprr'"),
    ],
)
def test_perf_refuses_unknown_names_before_timing(extra, message, shared_datasets, capsys):
    argv = ["perf", "--datasets", "musique-train-100", "--data-dir", str(shared_datasets)]
    assert main([*argv, "--encoders", "", "--ppr-size", "0", *extra]) == 2
    assert message in capsys.readouterr().err


def test_encoder_rows_compare_with_the_plain_anchor(minilm):
    texts = ["Polish Wedding is a 1998 film.", "Theresa Connelly is a director.", "x"]
    anchor, rows = perf.time_encoders(
        texts, {"ours": minilm, "hash": HashingEncoder(384)}, queries=["Who directed Rope?"]
    )
    assert anchor["passages_per_second"] > 0 and anchor["query_ms_p50"] > 0
    ours, hashed = rows
    assert ours.cosine_min > 0.9999 and ours.ratio_to_anchor > 0 and ours.query_ms_p95 > 0
    assert hashed.cosine_mean < 0.5 and hashed.name == "hashing-test"


def test_method_timing_reports_recall_of_the_timed_questions(shared_datasets):
    dataset = load_named("musique-train-100", shared_datasets)
    rows = perf.time_methods(dataset, ["dense"], encoder=HashingEncoder(), queries=4)
    assert rows[0].queries == 4 and 0 <= rows[0].recall_at_5 <= 100
    assert np.isfinite([rows[0].ms_p50, rows[0].encoded_ms_p95]).all()
