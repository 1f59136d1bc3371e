"""Turn a :class:`~rag_multihop.eval.harness.BenchResult` into JSON, markdown and a plot.

``results.json`` holds, per method, ``"R@k"`` and ``"AllR@k"`` (and ``"LastHopR@k"`` where the
dataset gives hop order) as percentages, latency median/p95 in ms, build time, and for every
method other than the reference (``dense`` when present) the paired-bootstrap interval of
ΔR@5 and the per-question wins/losses against it, and ``uses_evaluated_gold``: whether the
method used gold labels of the evaluated questions (transductive AAR, ``bridge-aar`` with a
transductive model); the markdown table and the plot mark those methods with
:data:`GOLD_MARK`. ``"by_type"`` holds R@2 / R@5 / AllR@5 per question group and method,
and a second markdown table shows them: the questions' type where they carry one (the
official 2Wiki files' comparison / compositional / inference / bridge-comparison, HotpotQA's
bridge / comparison, MuSiQue's hop count), else their gold count where it varies (the shared
2Wiki file). ``rankings.jsonl`` keeps, per question, its id, type, gold ids and each method's
top :data:`RANKING_DEPTH` ids (to read the failures behind a number). :func:`summarize` is
the one summary (mean, median, p95) of the per-query numbers the methods' ``bench_extras``
report.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop._version import __version__
from rag_multihop.eval.groups import UNTYPED
from rag_multihop.eval.metrics import paired_bootstrap, wins_losses

if TYPE_CHECKING:  # the harness runs the methods, which summarise with this module
    from rag_multihop.eval.harness import BenchResult, MethodResult
    from rag_multihop.llm.accounting import LLMAccount

logger = logging.getLogger(__name__)

TABLE_KS = (2, 5, 10)
COMPARE_K = 5
TYPE_KS = (2, 5)
RANKING_DEPTH = 10
GOLD_MARK = "†"
GOLD_NOTE = (
    f"{GOLD_MARK} used gold labels of the evaluated questions (transductive training): "
    "not comparable with label-free methods"
)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Mean, median and 95th percentile of ``values``, rounded to 4 decimals (``{}`` when
    empty): the one summary of per-query numbers in the methods' ``bench_extras``.

    >>> summarize([1, 2, 3, 10])
    {'mean': 4.0, 'median': 2.5, 'p95': 8.95}
    >>> summarize([])
    {}
    """
    if not len(values):
        return {}
    return {
        "mean": round(float(np.mean(values)), 4),
        "median": round(float(np.median(values)), 4),
        "p95": round(float(np.percentile(values, 95)), 4),
    }


def llm_usage(
    model: str | None,
    accounts: Sequence[LLMAccount],
    *,
    latencies: Sequence[float],
    fallbacks: Sequence[float],
) -> dict[str, Any]:
    r"""The ``llm`` block of a method's ``bench_extras``: the model, the total account and per
    query (one account each) the :func:`summarize`\ d calls, cache hits, tokens, cost
    (``None`` when a price is unknown), latency in seconds and fallbacks. The markdown report's
    "LLM usage per query" table reads it."""
    total = sum(accounts[1:], start=accounts[0]) if accounts else None
    costs = [a.cost for a in accounts]
    return {
        "model": model,
        "total": None if total is None else total.to_dict(),
        "per_query": {
            "calls": summarize([a.calls for a in accounts]),
            "cache_hits": summarize([a.cache_hits for a in accounts]),
            "prompt_tokens": summarize([a.prompt_tokens for a in accounts]),
            "completion_tokens": summarize([a.completion_tokens for a in accounts]),
            "cost_usd": None
            if any(c is None for c in costs)
            else summarize([float(c) for c in costs if c is not None]),
            "latency_s": summarize(latencies),
            "fallbacks": summarize(fallbacks),
        },
    }


def _label(name: str, uses_evaluated_gold: bool) -> str:
    return f"{name} {GOLD_MARK}" if uses_evaluated_gold else name


def _pct(value: float) -> float:
    return round(100.0 * value, 2)


def _reference(result: BenchResult) -> str | None:
    return "dense" if "dense" in result.methods else None


def method_summary(method: MethodResult, reference: MethodResult | None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "family": method.family,
        "description": method.description,
        "uses_evaluated_gold": method.uses_evaluated_gold,
    }
    summary.update({f"R@{k}": _pct(v) for k, v in method.recall.items()})
    summary.update({f"AllR@{k}": _pct(v) for k, v in method.all_recall.items()})
    summary.update({f"LastHopR@{k}": _pct(v) for k, v in method.last_hop_recall.items()})
    summary["latency_ms"] = {
        "median": round(float(np.median(method.latencies_ms)), 3),
        "p95": round(float(np.percentile(method.latencies_ms, 95)), 3),
    }
    summary["build_seconds"] = round(method.build_seconds, 3)
    if method.per_question_em is not None and method.per_question_f1 is not None:
        summary["EM"] = _pct(float(method.per_question_em.mean()))
        summary["F1"] = _pct(float(method.per_question_f1.mean()))
    if (
        reference is not None
        and reference is not method
        and COMPARE_K in method.per_question_recall
    ):
        ours = method.per_question_recall[COMPARE_K]
        theirs = reference.per_question_recall[COMPARE_K]
        boot = paired_bootstrap(ours, theirs)
        record = wins_losses(ours, theirs)
        summary[f"vs_{reference.name}"] = {
            f"delta_R@{COMPARE_K}": _pct(boot.mean_diff),
            "ci95": [_pct(boot.low), _pct(boot.high)],
            "p_value": round(boot.p_value, 4),
            "wins": record.wins,
            "losses": record.losses,
            "ties": record.ties,
        }
    if method.extras:
        summary["extras"] = method.extras
    return summary


def question_groups(result: BenchResult) -> list[str] | None:
    """Each question's type, in dataset order; where no question carries one, its gold count
    (``"2 gold"``, ``"4 gold"``: 2Wiki's question file has no type, and its four-gold
    questions are the comparisons through one hop each); ``None`` when neither varies."""
    questions = result.dataset.questions
    if any(q.type for q in questions):
        return [q.type or UNTYPED for q in questions]
    counts = [f"{len(q.gold)} gold" for q in questions]
    return counts if len(set(counts)) > 1 else None


def by_type(result: BenchResult) -> dict[str, dict[str, Any]]:
    """Per question type (or gold count, :func:`question_groups`): its question count and
    each method's R@2 / R@5 / AllR@5 (percent); empty when there are no groups."""
    types = question_groups(result)
    if types is None:
        return {}
    labels = np.array(types)
    table: dict[str, dict[str, Any]] = {}
    for name in sorted(set(types)):
        mask = labels == name
        row: dict[str, Any] = {"questions": int(mask.sum()), "methods": {}}
        for method_name, method in result.methods.items():
            scores = {
                f"R@{k}": _pct(float(method.per_question_recall[k][mask].mean()))
                for k in TYPE_KS
                if k in method.per_question_recall
            }
            if COMPARE_K in method.per_question_all_recall:
                all_recall = method.per_question_all_recall[COMPARE_K][mask].mean()
                scores[f"AllR@{COMPARE_K}"] = _pct(float(all_recall))
            row["methods"][method_name] = scores
        table[name] = row
    return table


def type_table(result: BenchResult) -> str:
    """The markdown table of :func:`by_type` (empty when there are no groups)."""
    table = by_type(result)
    if not table:
        return ""
    header = ["method", *[f"{name} ({row['questions']} q)" for name, row in table.items()]]
    keys = [f"R@{k}" for k in TYPE_KS] + [f"AllR@{COMPARE_K}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for method_name, method in result.methods.items():
        cells = [_label(method_name, method.uses_evaluated_gold)]
        for row in table.values():
            scores = row["methods"][method_name]
            cells.append(" / ".join(f"{scores[key]:.1f}" for key in keys if key in scores))
        lines.append("| " + " | ".join(cells) + " |")
    kind = "type" if any(q.type for q in result.dataset.questions) else "gold count"
    return f"\nBy question {kind} ({' / '.join(keys)})\n\n" + "\n".join(lines) + "\n"


def rankings_jsonl(result: BenchResult) -> str:
    """One JSON line per question: id, type, gold ids and each method's top
    :data:`RANKING_DEPTH` passage ids."""
    rankings = {name: method.rankings for name, method in result.methods.items()}
    lines = []
    for i, question in enumerate(result.dataset.questions):
        record = {
            "id": question.id,
            "type": question.type,
            "question": question.question,
            "gold": list(question.gold_ids),
            "top": {name: ranked[i][:RANKING_DEPTH] for name, ranked in rankings.items()},
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def to_json(result: BenchResult) -> dict[str, Any]:
    ref_name = _reference(result)
    reference = result.methods.get(ref_name) if ref_name else None
    data = result.dataset
    return {
        "rag_multihop_version": __version__,
        "dataset": {
            "name": data.name,
            "format": data.source_format,
            "questions": len(data.questions),
            "passages": len(data.corpus),
            "gold_passages": int(sum(len(q.gold) for q in data.questions)),
            "hop_ordered_questions": int(sum(q.hop_ordered for q in data.questions)),
            "view": dict(data.view),
        },
        "encoder": result.encoder_name,
        "embed_seconds": round(result.embed_seconds, 2),
        "ks": list(result.ks),
        "methods": {name: method_summary(m, reference) for name, m in result.methods.items()},
        "by_type": by_type(result),
    }


def markdown_table(result: BenchResult) -> str:
    """One row per method: R@2/R@5/R@10, AllR@5 (LastHopR@5 when the dataset gives hop order),
    ΔR@5 vs dense with its 95% CI, per-question wins/losses vs dense, latency."""
    summary = to_json(result)
    ks = [k for k in TABLE_KS if k in result.ks]
    extra = [f"AllR@{COMPARE_K}"]
    if summary["dataset"]["hop_ordered_questions"]:
        extra.append(f"LastHopR@{COMPARE_K}")
    if any("EM" in row for row in summary["methods"].values()):
        extra += ["EM", "F1"]
    header = [
        "method",
        *[f"R@{k}" for k in ks],
        *extra,
        f"ΔR@{COMPARE_K} vs dense (95% CI)",
        "W/L vs dense",
        "latency ms (p50/p95)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in summary["methods"].items():
        versus = row.get("vs_dense")
        delta = (
            f"{versus[f'delta_R@{COMPARE_K}']:+.1f} "
            f"[{versus['ci95'][0]:+.1f}, {versus['ci95'][1]:+.1f}]"
            if versus
            else "—"
        )
        record = f"{versus['wins']}/{versus['losses']}" if versus else "—"
        cells = [
            _label(name, row["uses_evaluated_gold"]),
            *[f"{row.get(f'R@{k}', float('nan')):.1f}" for k in ks],
            *[f"{row.get(key, float('nan')):.1f}" for key in extra],
            delta,
            record,
            f"{row['latency_ms']['median']:.2f}/{row['latency_ms']['p95']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    d = summary["dataset"]
    caption = (
        f"{d['name']}: {d['questions']} questions, {d['passages']} passages, "
        f"encoder {result.encoder_name}"
    )
    marked = any(row["uses_evaluated_gold"] for row in summary["methods"].values())
    note = f"\n{GOLD_NOTE}\n" if marked else ""
    return (
        caption
        + "\n\n"
        + "\n".join(lines)
        + "\n"
        + note
        + type_table(result)
        + _llm_table(summary["methods"])
    )


def _llm_table(methods: dict[str, Any]) -> str:
    """Per-query LLM usage of the methods that called a model (empty when none did)."""
    rows = []
    for name, row in methods.items():
        llm = row.get("extras", {}).get("llm")
        if not llm:
            continue
        q = llm["per_query"]
        cost = None if q["cost_usd"] is None else q["cost_usd"]["mean"]
        rows.append(
            f"| {name} | {llm['model']} | {q['calls']['mean']:.1f} / {q['calls']['p95']:.1f} | "
            f"{q['prompt_tokens']['mean']:.0f} | {q['completion_tokens']['mean']:.0f} | "
            f"{'unknown' if cost is None else f'{cost:.5f}'} | "
            f"{q['latency_s']['median']:.2f} / {q['latency_s']['p95']:.2f} | "
            f"{q['fallbacks']['mean']:.2f} |"
        )
    if not rows:
        return ""
    header = (
        "| method | model | LLM calls (mean / p95) | prompt tokens (mean) | completion tokens "
        "(mean) | cost USD (mean) | latency s (p50 / p95) | fallbacks (mean) |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    return "\nLLM usage per query\n\n" + header + "\n".join(rows) + "\n"


def plot_recall_curves(result: BenchResult, path: str | os.PathLike[str]) -> None:
    """Save a PNG of Recall@k against k, one line per method (needs matplotlib)."""
    from rag_multihop._optional import require

    require("matplotlib", extra="bench")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8))
    colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    markers = "os^vD<>ph*P"
    for i, (name, method) in enumerate(result.methods.items()):
        ks = sorted(method.recall)
        ax.plot(
            ks,
            [100 * method.recall[k] for k in ks],
            color=colours[i % len(colours)],
            marker=markers[i % len(markers)],
            label=_label(name, method.uses_evaluated_gold),
            linestyle="--" if method.family == "peer" else "-",
        )
    ax.set_xscale("log")
    ax.set_xticks(list(result.ks), [str(k) for k in result.ks])
    ax.set_xlabel("k")
    ax.set_ylabel("Recall@k (%)")
    ax.set_title(f"{result.dataset.name} ({len(result.dataset.questions)} questions)")
    ax.grid(alpha=0.3)
    # outside the axes, so many methods never hide the curves (peers dashed)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(result: BenchResult, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``results.json``, ``results.md``, ``rankings.jsonl`` and ``recall.png`` into
    ``out_dir``; returns the paths written. Without matplotlib (the ``bench`` extra) the plot
    is left out with a warning naming the install: the results never depend on it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / "results.json",
        "markdown": out / "results.md",
        "plot": out / "recall.png",
        "rankings": out / "rankings.jsonl",
    }
    paths["json"].write_text(json.dumps(to_json(result), indent=2, ensure_ascii=False) + "\n")
    paths["markdown"].write_text(markdown_table(result))
    paths["rankings"].write_text(rankings_jsonl(result))
    try:
        plot_recall_curves(result, paths["plot"])
    except ImportError as exc:
        logger.warning("recall.png not written: %s", exc)
        del paths["plot"]
    return paths
