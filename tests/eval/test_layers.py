"""The benchmark's imports all point down: harness -> methods -> context -> registry, and the
helpers every family shares (the context's memo and raw encoder, ``summarize``)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import rag_multihop.eval as eval_package
from rag_multihop import Corpus
from rag_multihop.encoders import CachedEncoder
from rag_multihop.eval.context import build_context
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.report import summarize
from rag_multihop.testing import HashingEncoder, polish_wedding_passages

EVAL = Path(eval_package.__file__).parent

ABOVE = {
    # module: the eval modules it must not import at run time (they sit above it)
    "registry.py": ("eval.context", "eval.methods", "eval.harness", "eval.report"),
    "context.py": ("eval.methods", "eval.harness", "eval.report"),
    "splits.py": ("eval.methods", "eval.harness", "eval.registry"),
    "report.py": ("eval.methods", "eval.harness"),
}


def runtime_imports(path: Path) -> set[str]:
    """Modules ``path`` imports, leaving out ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text())
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_eval_import_runs_upward():
    for name, forbidden in ABOVE.items():
        imported = runtime_imports(EVAL / name)
        assert not [
            m for m in imported if m.startswith(tuple(f"rag_multihop.{f}" for f in forbidden))
        ], name
    for family in (EVAL / "methods").glob("*.py"):
        assert not [
            m for m in runtime_imports(family) if m.startswith("rag_multihop.eval.harness")
        ], family.name


def test_the_context_memo_builds_once_per_key_and_the_raw_encoder_skips_the_disk_cache(tmp_path):
    base = HashingEncoder()
    corpus = Corpus(polish_wedding_passages())
    question = QAExample("q1", "Who directed Polish Wedding?", (), ("polish-wedding",), False)
    cached = CachedEncoder(base, tmp_path)
    context, _ = build_context(Dataset("toy", corpus, (question,), "native"), cached)
    built: list[int] = []
    first = context.memo("model:a", lambda: built.append(1) or len(built))
    again = context.memo("model:a", lambda: built.append(1) or len(built))
    other = context.memo("model:b", lambda: built.append(1) or len(built))
    assert (first, again, other, len(built)) == (1, 1, 2, 2)
    assert context.raw_encoder is base and context.encoder is cached
    assert context.passage_vectors.shape == (5, base.dim)


def test_summarize_is_the_one_summary_of_per_query_numbers():
    values = np.arange(1.0, 101.0)
    assert summarize(values) == {"mean": 50.5, "median": 50.5, "p95": 95.05}
    assert summarize([0.12345]) == {"mean": 0.1235, "median": 0.1235, "p95": 0.1235}
    assert summarize([]) == {}


def test_llm_usage_totals_the_accounts_and_summarises_each_query():
    from rag_multihop.eval.report import llm_usage
    from rag_multihop.llm import LLMAccount

    accounts = [LLMAccount(calls=2, prompt_tokens=100, cost=0.01), LLMAccount(calls=4, cost=0.03)]
    usage = llm_usage("openai/x", accounts, latencies=[1.0, 3.0], fallbacks=[0, 1])
    assert usage["model"] == "openai/x"
    assert usage["total"]["calls"] == 6 and usage["total"]["prompt_tokens"] == 100
    per_query = usage["per_query"]
    assert per_query["calls"]["mean"] == 3.0 and per_query["latency_s"]["median"] == 2.0
    assert per_query["cost_usd"]["mean"] == 0.02 and per_query["fallbacks"]["mean"] == 0.5
    unpriced = [LLMAccount(calls=1, cost=None)]
    assert llm_usage("m", unpriced, latencies=[1.0], fallbacks=[0])["per_query"]["cost_usd"] is None
    assert llm_usage("m", [], latencies=[], fallbacks=[])["total"] is None
