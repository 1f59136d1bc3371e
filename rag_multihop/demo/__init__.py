"""The bundled demo: a small fictional multi-hop corpus and a text report of rankings.

``rag-multihop demo`` embeds the corpus with the bundled MiniLM encoder, runs every available
method and prints, per question, each method's top candidates with their signals, then a
recall table.

Example:
    >>> data = load_demo_dataset()
    >>> len(data.questions) >= 20, 60 <= len(data.corpus) <= 150
    (True, True)
"""

from __future__ import annotations

from importlib.resources import as_file, files

from rag_multihop.eval.datasets import Dataset, load_dataset
from rag_multihop.eval.harness import BenchResult
from rag_multihop.types import Candidate

DEMO_FILE = "demo_corpus.json"


def load_demo_dataset() -> Dataset:
    """The demo corpus and questions shipped inside the package."""
    with as_file(files(__package__) / DEMO_FILE) as path:
        return load_dataset(path, name="demo")


def format_signals(candidate: Candidate) -> str:
    return ", ".join(f"{name}={value:.3f}" for name, value in candidate.signals.items())


def render_rankings(result: BenchResult, *, top: int = 5, max_questions: int | None = None) -> str:
    """Per question: the gold ids, then each method's top ``top`` (✓ marks gold) with signals."""
    lines: list[str] = []
    questions = result.dataset.questions[:max_questions]
    for qi, question in enumerate(questions):
        gold = set(question.gold_ids)
        lines.append(f"\n[{question.id}] ({question.type or 'question'}) {question.question}")
        lines.append(
            f"  answer: {question.answers[0] if question.answers else '—'}; "
            f"gold: {', '.join(question.gold_ids)}"
        )
        for name, method in result.methods.items():
            row = method.candidates[qi][:top]
            found = sum(c.passage.id in gold for c in row)
            lines.append(f"  {name}  ({found}/{len(gold)} gold in top {top})")
            for c in row:
                mark = "✓" if c.passage.id in gold else " "
                lines.append(
                    f"    {c.rank:>2}. {mark} {c.passage.id:<32} {c.score:8.4f}  "
                    f"{format_signals(c)}"
                )
    return "\n".join(lines) + "\n"
