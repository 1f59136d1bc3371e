"""The ``multihop`` benchmark method on the bundled demo corpus (hashing encoder)."""

from __future__ import annotations

import pytest

from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods, check_options
from rag_multihop.eval.methods.multihop import MULTIHOP_OPTIONS


def test_multihop_is_registered_and_reports_its_tables(hashing_encoder) -> None:
    assert "multihop" in available_methods()
    data = load_demo_dataset()
    result = run_benchmark(data, ["dense", "multihop"], encoder=hashing_encoder, ks=(2, 5))
    method = result.methods["multihop"]
    extras = method.extras
    assert extras["settings"]["first_hops"] == 5 and extras["links"] > 0
    groups = extras["by_type"]
    assert groups["all"]["questions"] == len(data.questions)
    assert groups["all"]["R@5"] == pytest.approx(100 * method.recall[5], abs=0.01)
    assert sum(g["questions"] for g in extras["by_gold_count"].values()) == len(data.questions)
    assert method.recall[5] >= result.methods["dense"].recall[5]


def test_options_switch_parts_off(hashing_encoder) -> None:
    data = load_demo_dataset()
    options = {"multihop_graph_tail": "false", "multihop_pair": "0"}
    extras = (
        run_benchmark(data, ["multihop"], encoder=hashing_encoder, ks=(2,), options=options)
        .methods["multihop"]
        .extras
    )
    assert extras["settings"]["graph_tail"] is False and extras["settings"]["pair"] is False
    assert extras["build_seconds"]["entity_graph"] >= 0


def test_bad_options_name_the_option_and_the_value() -> None:
    with pytest.raises(ValueError, match=r"multihop_pair must be true or false .*'maybe'"):
        MULTIHOP_OPTIONS.read({"multihop_pair": "maybe"})
    with pytest.raises(ValueError, match="multihop_first_hops must be an integer, got 'five'"):
        MULTIHOP_OPTIONS.read({"multihop_first_hops": "five"})
    with pytest.raises(ValueError, match="first_hops must be a positive integer, got 0"):
        MULTIHOP_OPTIONS.read({"multihop_first_hops": "0"})
    with pytest.raises(ValueError, match="did you mean 'multihop_first_hops'"):
        check_options({"multihop_first_hop": "3"})
