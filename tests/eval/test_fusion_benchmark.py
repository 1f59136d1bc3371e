from __future__ import annotations

import pytest

from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods

METHODS = [
    "graph",
    "graph-entities",
    "graph-dense5",
    "pit-boltzmann",
    "pit-linear",
    "minmax-linear",
    "minmax-boltzmann",
    "rrf",
    "dbsf",
    "pit-boltzmann-cap5",
    "pit-boltzmann-cap20",
    "pit-boltzmann-nocap",
    "pit-boltzmann-3way",
]


def test_methods_are_registered():
    registered = available_methods()
    assert set(METHODS) <= set(registered)
    assert all(registered[name].family == "ours" for name in METHODS)


def test_every_method_runs_and_reports_its_settings(hashing_encoder):
    data = load_demo_dataset()
    result = run_benchmark(data, ["dense", *METHODS], encoder=hashing_encoder, ks=(5, 10))
    graph = result.methods["graph"]
    assert graph.extras["graph_build_seconds"] >= 0 and graph.extras["entities"] > 0
    fused = result.methods["pit-boltzmann"]
    assert fused.extras["pool_cap"] == [None, 10] and fused.extras["child_k"] == 50
    assert result.methods["pit-boltzmann-3way"].extras["systems"] == ["dense", "graph", "bm25"]
    signals = {key for row in fused.candidates for c in row for key in c.signals}
    assert signals == {"dense", "dense_cal", "graph", "graph_cal"}
    # the dense top 5 seed the walk and keep the top 5: the same R@5 as dense
    assert result.methods["graph-dense5"].recall[5] == result.methods["dense"].recall[5]


def test_options_are_parsed_and_checked(hashing_encoder):
    data = load_demo_dataset()
    options = {"graph_pool_cap": "3", "fusion_child_k": "20", "fusion_params": "c=2"}
    result = run_benchmark(
        data, ["pit-boltzmann", "rrf"], encoder=hashing_encoder, ks=(5,), options=options
    )
    extras = result.methods["pit-boltzmann"].extras
    assert extras["pool_cap"] == [None, 3] and extras["child_k"] == 20
    assert extras["params"] == {"c": 2.0}
    assert result.methods["rrf"].extras["params"] == {}  # rrf takes no c
    with pytest.raises(ValueError, match="option graph_pool_cap must be an integer or none"):
        run_benchmark(
            data, ["pit-boltzmann"], encoder=hashing_encoder, options={"graph_pool_cap": "ten"}
        )
    with pytest.raises(ValueError, match=r"unknown --option 'graph_cap' \(did you mean"):
        run_benchmark(data, ["pit-boltzmann"], encoder=hashing_encoder, options={"graph_cap": "3"})
