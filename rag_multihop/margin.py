"""Keep the first stage's order where a reranker's lead is small (RaLa, AAR).

A reranker rescores a first stage's candidates; :func:`margin_order` lets it take a rank
from the first stage only when its best remaining candidate leads the first stage's by at
least ``margin`` (in the reranker's own score), so where its signal is weak the first
stage's order stays. :func:`margin_ranked` turns that order into ranked candidates, the
ranks the first stage kept against the reranker marked with the signal ``first_stage``.

Example:
    >>> margin_order([0, 1, 2], np.array([0.50, 0.51, 0.60]), ["a", "b", "c"], 0.02)
    [(2, False), (0, True), (1, False)]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop.types import Candidate


def margin_order(
    first: Sequence[int], scores: np.ndarray, ids: Sequence[str], margin: float
) -> list[tuple[int, bool]]:
    """The output order as (candidate position, kept by the first stage) pairs.

    ``first`` lists the candidates' positions in the first stage's order. At each rank the
    first stage's best remaining candidate keeps the rank unless the remaining candidate
    with the highest ``scores`` value (ties by passage id) leads it by at least ``margin``;
    then that one takes it. ``margin`` 0 is the plain reranked order; ``True`` marks a rank
    where the first stage's candidate stayed although the reranker preferred another.
    """
    by_score = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))
    used = [False] * len(ids)
    out: list[tuple[int, bool]] = []
    d = r = 0
    for _ in range(len(ids)):
        while used[first[d]]:
            d += 1
        while used[by_score[r]]:
            r += 1
        kept, best = first[d], by_score[r]
        take_best = float(scores[best]) >= float(scores[kept]) + margin
        pick = best if take_best else kept
        used[pick] = True
        out.append((pick, not take_best and best != kept))
    return out


def margin_ranked(
    first_scores: Sequence[float],
    rescored: Sequence[Candidate],
    scores: np.ndarray,
    margin: float,
    top_n: int | None = None,
) -> list[Candidate]:
    """``rescored`` (in the first stage's candidate order, scored by the reranker) ranked
    by :func:`margin_order` (first-stage order: ``first_scores``, best first), at most
    ``top_n``. Scores decrease with rank (a rank the first stage kept scores just below
    the previous one); kept ranks gain the signal ``first_stage``."""
    first = sorted(range(len(rescored)), key=lambda i: -first_scores[i])
    order = margin_order(first, scores, [c.id for c in rescored], margin)[:top_n]
    out: list[Candidate] = []
    for rank, (i, kept) in enumerate(order, start=1):
        candidate = rescored[i]
        score = min(candidate.score, out[-1].score - 1e-6) if out else candidate.score
        signals = {**candidate.signals, **({"first_stage": 1.0} if kept else {})}
        out.append(Candidate(candidate.passage, score, rank, signals))
    return out
