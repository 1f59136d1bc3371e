"""The CoopRAG benchmark methods on the bundled demo corpus: RaLa and its store, the LLM-free
KeyExtract, and the LLM path against a scripted OpenAI-compatible server (EM/F1, accounts)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from rag_multihop import Corpus
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods import available_methods, check_options
from rag_multihop.eval.methods.coop import COOP_OPTIONS
from rag_multihop.eval.methods.rala import RALA_OPTIONS
from rag_multihop.eval.report import markdown_table, to_json
from tests.coop import scripted_llm


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_MULTIHOP_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def server() -> Iterator[str]:
    srv, url = scripted_llm.start()
    yield url
    srv.shutdown()


def small():
    """Four demo questions over their gold passages and 16 others (a quick corpus)."""
    data = load_demo_dataset()
    questions = data.questions[:4]
    gold = {pid for q in questions for pid in q.gold_ids}
    others = [p for p in data.corpus if p.id not in gold][:16]
    passages = [p for p in data.corpus if p.id in gold] + others
    return replace(data, corpus=Corpus(passages), questions=questions)


def test_methods_and_options_are_registered() -> None:
    names = {"rala", "rala-gap", "rala-layer-gap", "rala-bridge", "uar", "uar-subq", "coop"}
    assert names | {"coop-keyextract", "keyextract-free"} <= set(available_methods())
    check_options({"rala_scoring": "gap-weighted", "rala_token_states": "query-time"})
    check_options({"coop_top_k": "3", "coop_uar_mode": "sub-questions"})
    assert RALA_OPTIONS.read({"rala_candidate_layers": "1,3"}).rala.candidate_layers == (1, 3)
    assert COOP_OPTIONS.read({"coop_keyextract_rounds": "3"}).keyextract_rounds == 3
    with pytest.raises(ValueError, match="rala_scoring"):
        check_options({"rala_scoring": "eq9"})
    with pytest.raises(ValueError, match="did you mean 'rala_token_states'"):
        check_options({"rala_token_state": "precomputed"})


def test_rala_bench_reports_store_memory_and_diagnostics(minilm) -> None:
    data = small()
    result = run_benchmark(data, ["dense", "rala", "rala-gap"], encoder=minilm, ks=(1, 2, 5))
    extras = result.methods["rala"].extras
    assert extras["store"]["passages"] == len(data.corpus)
    assert extras["store"]["codec"] == "float16" and extras["store"]["bytes_per_passage"] > 0
    assert extras["token_layers"] == [6] and extras["encoded_at_query_time"] == 0
    assert {"first_stage", "maxsim", "rala"} <= set(extras["auc_vs_gold"])
    gap = result.methods["rala-gap"].extras
    assert gap["pooled_layers"][0] == 6 and "gap_weight" in gap["auc_vs_gold"]
    assert gap["gap_weight_log_spread_over_maxsim"]["mean"] > 0
    # a second run reads the cached store, a query-time run encodes the candidates
    again = run_benchmark(
        data,
        ["rala"],
        encoder=minilm,
        ks=(1, 2, 5),
        options={"rala_token_states": "query-time"},
    )
    assert again.methods["rala"].rankings == result.methods["rala"].rankings
    assert again.methods["rala"].extras["encoded_at_query_time"] > 0
    # a compressed codec packs the same cached states, at a fraction of the bytes
    options = {"rala_codec": "residual-2bit"}
    packed = run_benchmark(data, ["rala"], encoder=minilm, ks=(1, 2, 5), options=options)
    packed = packed.methods["rala"]
    assert packed.extras["store"]["codec"] == "residual-2bit"
    float16_bytes = extras["store"]["bytes_per_passage"]
    assert packed.extras["store"]["bytes_per_passage"] < float16_bytes / 3


def test_llm_methods_need_an_llm(minilm) -> None:
    with pytest.raises(ValueError, match="needs an LLM: pass --llm MODEL"):
        run_benchmark(small(), ["coop"], encoder=minilm, ks=(1, 2))


def test_llm_free_keyextract_runs_its_budget(minilm) -> None:
    result = run_benchmark(small(), ["keyextract-free"], encoder=minilm, ks=(1, 2, 5))
    extras = result.methods["keyextract-free"].extras
    assert extras["keyextract"]["stops"] == {"budget": 4}
    assert extras["keyextract"]["rounds"]["mean"] == 2
    assert extras["settings"]["keyextract_rounds"] == 2
    assert "llm" not in extras and result.methods["keyextract-free"].per_question_em is None


def test_the_llm_path_reports_em_f1_and_every_call(minilm, server: str) -> None:
    options = {"llm": "openai/scripted", "llm_api_base": server, "coop_top_k": "3"}
    result = run_benchmark(
        small(),
        ["dense", "uar", "coop", "coop-keyextract"],
        encoder=minilm,
        ks=(1, 2, 5),
        options=options,
    )
    coop = result.methods["coop"]
    assert coop.per_question_em is not None and coop.per_question_f1 is not None
    llm = coop.extras["llm"]
    assert llm["per_query"]["calls"]["mean"] == 3  # unroll, complete, answer
    assert set(llm["per_stage"]) == {"unroll", "complete", "answer"}
    assert llm["per_stage"]["unroll"]["prompt_tokens_per_call"] == scripted_llm.PROMPT_TOKENS
    assert coop.extras["unrolling"]["fallbacks"] == 0
    assert result.methods["uar"].extras["llm"]["per_query"]["calls"]["mean"] == 1
    keyed = result.methods["coop-keyextract"].extras
    assert keyed["keyextract"]["stops"] == {"answerable": 4}
    assert keyed["llm"]["per_query"]["calls"]["mean"] == 4
    summary = to_json(result)["methods"]
    assert "EM" in summary["coop"] and "EM" not in summary["dense"]
    table = markdown_table(result)
    assert "| EM | F1 |" in table and "LLM usage per query" in table
