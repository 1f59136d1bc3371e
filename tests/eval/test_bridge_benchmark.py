"""The bridge benchmark methods, LLM-free, on the bundled demo corpus (hashing encoder)."""

from __future__ import annotations

import pytest

from rag_multihop.bridge.queries import LLM_FREE_ENTITIES
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods, check_options
from rag_multihop.eval.methods.bridge import BRIDGE_OPTIONS, LLM_OPTIONS


def test_bridge_methods_are_registered() -> None:
    assert {"bridge", "bridge-embed", "bridge-aar"} <= set(available_methods())


def test_llm_free_bench_reports_pool_coverage_and_types(hashing_encoder) -> None:
    data = load_demo_dataset()
    result = run_benchmark(
        data, ["dense", "bridge", "bridge-embed"], encoder=hashing_encoder, ks=(1, 2, 5, 10)
    )
    bridge = result.methods["bridge"]
    extras = bridge.extras
    assert extras["mode"] == "llm-free" and extras["judge"] == "embedding"  # no AAR model yet
    assert extras["settings"]["alpha"] == 0.1 and extras["settings"]["entities"] == 4
    assert extras["settings"]["judge_weights"]["bridge"] == 0.0
    assert "llm" not in extras
    groups = extras["by_type"]
    assert groups["all"]["questions"] == len(data.questions)
    assert {q.type for q in data.questions} <= set(groups)
    everything = groups["all"]
    assert 0 <= everything["pool_coverage"] <= 100
    assert everything["R@5"] == pytest.approx(100 * bridge.recall[5], abs=0.01)
    assert everything["dense_R@5"] == pytest.approx(
        100 * result.methods["dense"].recall[5], abs=0.01
    )
    assert extras["pool"]["size"]["mean"] <= 20
    by_gold = extras["by_gold_count"]
    assert sum(g["questions"] for g in by_gold.values()) == len(data.questions)
    assert result.methods["bridge-embed"].rankings == bridge.rankings  # same judge here


def test_untyped_datasets_say_so(hashing_encoder) -> None:
    from dataclasses import replace

    data = load_demo_dataset()
    untyped = replace(data, questions=tuple(replace(q, type=None) for q in data.questions[:5]))
    extras = (
        run_benchmark(untyped, ["bridge"], encoder=hashing_encoder, ks=(2, 5))
        .methods["bridge"]
        .extras
    )
    assert set(extras["by_type"]) == {"all", "untyped"}
    assert extras["by_type_note"] == "the dataset gives no question types"


def test_bridge_does_not_depend_on_the_other_methods_of_the_run(hashing_encoder) -> None:
    pytest.importorskip("torch")
    data = load_demo_dataset()
    options = {"aar_epochs": "2", "protocol": "heldout"}
    result = run_benchmark(
        data, ["aar", "bridge", "bridge-aar"], encoder=hashing_encoder, ks=(2, 5), options=options
    )
    alone = run_benchmark(data, ["bridge"], encoder=hashing_encoder, ks=(2, 5), options=options)
    auto, aar = result.methods["bridge"].extras, result.methods["bridge-aar"].extras
    assert auto["judge"] == "embedding"
    assert aar["judge"] == "association"
    assert result.methods["bridge"].rankings == alone.methods["bridge"].rankings
    assert [m["settings"]["protocol"] for m in aar["aar_models"]] == ["heldout", "heldout"]
    assert "leakage" in aar["aar_models"][0]
    assert aar["settings"]["judge_weights"]["question"] == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bridge_alpha": "2"}, "bridge_alpha='2': alpha must be in \\[0, 1\\], got 2.0"),
        ({"bridge_alpha": "x"}, "option bridge_alpha must be a number, got 'x'"),
        ({"bridge_position": "last"}, "bridge_position must be one of \\['first', 'judged'\\]"),
        ({"bridge_entities": "-1"}, "entities must be an integer >= 0, got -1"),
        (
            {"llm": "openai/x", "llm_concurrency": "0"},
            "max_concurrency must be an integer in \\[1, 1024\\]",
        ),
        ({"bridge_templates": "question,nope"}, "templates must name at least one of"),
        ({"bridge_judge_weights": "1,0,1"}, "option bridge_judge_weights must be 4 comma"),
        ({"bridge_judge_weights": "0,0,0,0"}, "JudgeWeights must not all be 0"),
        ({"bridge_alhpa": "0.2"}, "unknown --option 'bridge_alhpa' \\(did you mean 'bridge_alpha'"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_options(options)


def test_ablation_options_reach_the_pipeline(hashing_encoder) -> None:
    options = {
        "bridge_templates": "question",
        "bridge_entities": "2",
        "bridge_judge_weights": "1,0.5,1,0",
        "bridge_position": "judged",
    }
    extras = (
        run_benchmark(
            load_demo_dataset(), ["bridge-embed"], encoder=hashing_encoder, ks=(2,), options=options
        )
        .methods["bridge-embed"]
        .extras
    )
    settings = extras["settings"]
    assert settings["templates"] == ["question"] and settings["entities"] == 2
    assert settings["judge_weights"] == {
        "question": 1.0,
        "bridge": 0.5,
        "bridge_mention": 1.0,
        "question_mention": 0.0,
    }
    assert settings["bridge_position"] == "judged"


def test_options_defaults_and_llm_client() -> None:
    assert BRIDGE_OPTIONS.read({}).entities == LLM_FREE_ENTITIES
    defaults = LLM_OPTIONS.read({})
    assert defaults.model is None
    with pytest.raises(ValueError, match="no LLM configured; pass --option llm=MODEL"):
        defaults.client()
    options = LLM_OPTIONS.read({"llm": "openai/gpt-4o-mini", "llm_api_key_env": "K"})
    client = options.client()
    assert client.settings.model == "openai/gpt-4o-mini" and client.settings.api_key_env == "K"
    assert client.cache is None
