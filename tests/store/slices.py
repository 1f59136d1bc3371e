"""A reproducible slice of the shared 2Wiki set for the store's tests."""

from __future__ import annotations

import random
from pathlib import Path

from rag_multihop import Passage
from rag_multihop.eval.datasets import load_named


def wiki_slice(datasets: Path, size: int, n_questions: int) -> tuple[list[Passage], list[str]]:
    """``size`` passages (the gold of the first ``n_questions`` questions, then a seeded
    sample of the others, metadata dropped) and those questions' texts."""
    dataset = load_named("2wiki", datasets)
    questions = dataset.questions[:n_questions]
    gold = [pid for q in questions for pid in q.gold_ids]
    rest = [p.id for p in dataset.corpus if p.id not in set(gold)]
    ids = list(dict.fromkeys(gold))
    ids += random.Random(0).sample(rest, size - len(ids))
    passages = [Passage(p.id, p.text, p.title) for p in (dataset.corpus[i] for i in ids)]
    return passages, [q.question for q in questions]
