"""The aar / aar-reverse bench methods (protocols, pair sources, extras) and `aar train`."""

from __future__ import annotations

import json
import re

import pytest

from rag_multihop.association import AssociationReranker, PairSet
from rag_multihop.cli import main
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods
from rag_multihop.eval.methods.association import AAR_OPTIONS, AARBenchSettings, heldout_folds
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

FAST = {"aar_epochs": "2"}


@pytest.fixture(autouse=True)
def core_methods_only(monkeypatch):
    """Skip importing the installed integrations' peer methods (slow, not under test here)."""
    import rag_multihop.eval.methods as methods

    assert methods.association  # the core families are registered
    monkeypatch.setattr(methods, "_entry_points_loaded", True)


@pytest.fixture(scope="module")
def demo():
    return load_demo_dataset()


def test_methods_are_registered():
    methods = available_methods()
    assert {"aar", "aar-reverse"} <= set(methods)
    assert methods["aar"].family == "ours"


def test_settings_defaults_and_parsing():
    assert AAR_OPTIONS.read({}) == AARBenchSettings()
    options = {
        "protocol": "heldout",
        "pairs": "gold+corpus",
        "aar_lambda": "0.25",
        "aar_candidates": "50",
        "aar_epochs": "3",
        "aar_seed": "2",
        "aar_relations": "title-mention, co-mention",
        "aar_threads": "1",
        "aar_batch_size": "64",
    }
    parsed = AAR_OPTIONS.read(options)
    assert (parsed.protocol, parsed.pairs, parsed.scoring.lambda_) == (
        "heldout",
        "gold+corpus",
        0.25,
    )
    assert (parsed.scoring.candidates, parsed.training.threads) == (50, 1)
    assert (parsed.training.epochs, parsed.training.seed, parsed.training.batch_size) == (3, 2, 64)
    assert parsed.relations == ("title-mention", "co-mention")
    assert parsed.scoring.mode == "mixed"  # the methods fix the mode; it is no option
    assert parsed.scoring.first_stage_margin is None  # automatic: from the pair source
    for given, margin in (("0.05", 0.05), ("none", None)):
        read = AAR_OPTIONS.read({"aar_first_stage_margin": given})
        assert read.scoring.first_stage_margin == margin
    with pytest.raises(ValueError, match="unknown --option 'aar_mode'"):
        AAR_OPTIONS.read({"aar_mode": "reverse"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"protocol": "inductive"}, r"protocol must be one of \['heldout', 'transductive'\]"),
        ({"pairs": "silver"}, r"pairs must be one of \['corpus', 'gold', 'gold\+corpus', "),
        ({"aar_lambda": "2"}, r"aar_lambda='2': lambda_ must be in \[0, 1\], got 2.0"),
        ({"aar_lambda": "half"}, "option aar_lambda must be a number, got 'half'"),
        ({"aar_candidates": "0"}, "candidates must be a positive integer, got 0"),
        ({"aar_epochs": "-3"}, "aar_epochs='-3': epochs must be a positive integer, got -3"),
        ({"aar_seed": "-1"}, "seed must be an integer >= 0, got -1"),
        ({"aar_relations": "links"}, r"relations must be a non-empty list of \["),
        ({"aar_threads": "0"}, "threads must be a positive integer, got 0"),
        (
            {"aar_first_stage_margin": "-0.1"},
            r"first_stage_margin must be a finite number >= 0, got -0.1 \(or None",
        ),
        ({"aar_k": "50"}, r"unknown --option 'aar_k'.*valid aar_\* options: aar_batch_size"),
    ],
)
def test_bad_options_name_the_allowed_values(options, message):
    with pytest.raises(ValueError, match=message):
        AAR_OPTIONS.read(options)


def test_heldout_folds_are_a_fixed_disjoint_split(demo):
    first, second = heldout_folds(demo.questions)
    assert heldout_folds(demo.questions) == (first, second)
    ids = [q.id for q in first + second]
    assert sorted(ids) == sorted(q.id for q in demo.questions) and len(set(ids)) == len(ids)
    assert abs(len(first) - len(second)) <= 1


def test_transductive_gold_run_reports_training_leakage_and_timings(demo):
    result = run_benchmark(
        demo, ["dense", "aar", "aar-reverse"], encoder=HashingEncoder(), options=FAST, ks=(5,)
    )
    extras = result.methods["aar"].extras
    assert (extras["protocol"], extras["pairs"], extras["mode"]) == (
        "transductive",
        "gold",
        "mixed",
    )
    assert extras["candidates"] == 100
    (model,) = extras["models"]
    assert model["leakage"]["gold_pairs_seen"] == 1.0
    assert model["training_stats"]["epochs"] == 2 and model["pair_stats"]["sources"] == {
        "gold": model["pair_stats"]["pairs"]
    }
    for key in ("faiss_search_ms", "scoring_ms", "rerank_ms"):
        assert extras[key]["median"] > 0
    assert extras["rerank_over_faiss"] > 0
    assert result.methods["aar-reverse"].extras["mode"] == "reverse"
    # both scoring modes share the one trained model
    assert result.methods["aar-reverse"].build_seconds < result.methods["aar"].build_seconds
    assert len(result.methods["aar"].candidates[0]) == 5
    assert {"dense", "association", "cosine"} <= set(result.methods["aar"].candidates[0][0].signals)


@pytest.mark.parametrize("pairs", ["gold", "shuffled", "corpus", "gold+corpus"])
def test_heldout_trains_one_model_per_fold(demo, pairs):
    options = {**FAST, "protocol": "heldout", "pairs": pairs}
    result = run_benchmark(demo, ["aar"], encoder=HashingEncoder(), options=options, ks=(5,))
    models = result.methods["aar"].extras["models"]
    assert len(models) == 2
    assert sum(m["eval_questions"] for m in models) == len(demo.questions)
    if pairs == "corpus":
        assert {m["train_questions"] for m in models} == {0}
        assert models[0]["training_stats"] == models[1]["training_stats"]
        assert set(models[0]["pair_stats"]["sources"]) == {"title-mention"}
    if pairs == "gold":
        # the folds' gold pairs are disjoint unless two questions share a gold pair
        assert all(m["leakage"]["gold_pairs_seen"] < 0.5 for m in models)


def test_unknown_query_id_is_an_error(demo):
    from rag_multihop.eval.context import build_context
    from rag_multihop.types import Query

    context, _ = build_context(demo, HashingEncoder(), options=FAST)
    retriever = available_methods()["aar"].build(context)
    with pytest.raises(ValueError, match="query id 'nope' is not a question of this benchmark"):
        retriever.retrieve(Query("x", id="nope", embedding=context.query_vectors[0]), k=5)


@pytest.fixture
def hashing_default_encoder(monkeypatch):
    """`aar train` embeds with the bundled MiniLM; tests use the hashing encoder instead."""
    import rag_multihop.encoders as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda: HashingEncoder(name="hashing-test"))


def test_cli_train_from_a_question_file(tmp_path, hashing_default_encoder, capsys):
    import rag_multihop.demo
    from rag_multihop.demo import DEMO_FILE

    questions = f"{rag_multihop.demo.__path__[0]}/{DEMO_FILE}"
    out = tmp_path / "model"
    argv = ["aar", "train", "--questions", questions, "--out", str(out), "--epochs", "2"]
    code = main([*argv, "--mode", "reverse", "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "pairs over" in printed and f"saved to {out}" in printed
    loaded = AssociationReranker.load(out)
    assert (loaded.mode, loaded.encoder_name) == ("reverse", "hashing-test")
    assert "pair source 'labelled': first-stage margin 0.0 by default" in printed
    assert (loaded.pair_source, loaded.first_stage_margin) == ("labelled", 0.0)
    expected = PairSet.from_gold(load_demo_dataset().questions)
    assert loaded.provenance["pair_stats"]["pairs"] == len(expected) > 0


def test_cli_train_from_corpus_and_pairs_file(tmp_path, hashing_default_encoder):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"text {i}"}) for i in range(6)
        )
    )
    sessions = tmp_path / "sessions.json"
    sessions.write_text(json.dumps([["d0", "d1", "d2"], ["d3", "d4"]]))
    out = tmp_path / "m"
    argv = ["aar", "train", "--corpus", str(corpus), "--pairs", str(sessions), "--out", str(out)]
    assert main([*argv, "--epochs", "1", "--cache-dir", str(tmp_path / "c")]) == 0
    assert AssociationReranker.load(out).provenance["pair_stats"]["sources"] == {"sessions.json": 4}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pairs", "PAIRS"], "give --dataset NAME, --questions FILE"),
        (["--corpus", "CORPUS", "--pair-source", "gold"], "--pair-source gold needs questions"),
        (["--corpus", "CORPUS"], "no association pairs"),
        (["--corpus", "CORPUS", "--pairs", "BAD_PAIRS"], r"1 passage id\(s\) that are not in the"),
    ],
)
def test_cli_train_errors(tmp_path, hashing_default_encoder, capsys, args, message):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": "A", "text": "a"}, {"title": "B", "text": "b"}]))
    (tmp_path / "pairs.json").write_text(json.dumps([["A", "B"]]))
    (tmp_path / "bad.json").write_text(json.dumps([["A", "Z"]]))
    paths = {
        "CORPUS": str(corpus),
        "PAIRS": str(tmp_path / "pairs.json"),
        "BAD_PAIRS": str(tmp_path / "bad.json"),
    }
    argv = ["aar", "train", *[paths.get(a, a) for a in args], "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    assert re.search(message, capsys.readouterr().err)


def test_methods_trained_on_the_evaluated_gold_are_labelled(demo):
    from rag_multihop.eval.report import GOLD_MARK, markdown_table, to_json

    options = {**FAST, "aar_candidates": "10"}
    transductive = run_benchmark(
        demo,
        ["dense", "aar", "bridge", "bridge-aar"],
        encoder=HashingEncoder(),
        ks=(5,),
        options=options,
    )
    methods = to_json(transductive)["methods"]
    assert [
        methods[m]["uses_evaluated_gold"] for m in ("dense", "aar", "bridge", "bridge-aar")
    ] == [
        False,
        True,
        False,
        True,
    ]
    table = markdown_table(transductive)
    assert f"| aar {GOLD_MARK} |" in table and f"| bridge-aar {GOLD_MARK} |" in table
    assert "| bridge |" in table and "used gold labels of the evaluated questions" in table
    label_free = run_benchmark(
        demo, ["aar"], encoder=HashingEncoder(), ks=(5,), options={**options, "pairs": "corpus"}
    )
    assert to_json(label_free)["methods"]["aar"]["uses_evaluated_gold"] is False
    assert GOLD_MARK not in markdown_table(label_free)
