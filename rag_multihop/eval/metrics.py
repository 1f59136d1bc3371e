"""Retrieval and QA metrics as plain functions, plus paired comparisons between two systems.

Every metric returns a fraction in ``[0, 1]`` for one question; averaging over questions and
converting to percentages is the caller's job (the bench reports percentages).

Example:
    >>> recall_at_k(["a", "x", "b"], ["a", "b"], k=2)
    0.5
    >>> exact_match("The Eiffel Tower!", ["eiffel tower"]), f1_score("in Paris", ["Paris"])
    (1.0, 0.6666666666666666)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rag_multihop.text import normalize_answer
from rag_multihop.validation import check_positive_int

Values = Sequence[float] | np.ndarray
"""Per-question metric values: a sequence of floats or a 1-D array."""

_SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})
# Bootstrap resamples are drawn in blocks of about this many indices to bound memory.
_BLOCK_ELEMENTS = 4_000_000


# --- retrieval ----------------------------------------------------------------------------------


Gold = Sequence[str | Collection[str]]
"""A question's gold: one entry per gold unit, either a passage id or a collection of
alternative ids, any of which finds the unit (a gold passage split over two chunks)."""


def gold_units(gold: Gold) -> list[frozenset[str]]:
    """Each distinct gold unit as the set of ids that find it.

    >>> [sorted(unit) for unit in gold_units(["a", ("b", "c"), "a"])]
    [['a'], ['b', 'c']]
    """
    units: dict[frozenset[str], None] = {}
    for entry in gold:
        unit = frozenset((entry,) if isinstance(entry, str) else entry)
        if not unit:
            raise ValueError("a gold unit is empty; give at least one id for each")
        units.setdefault(unit)
    return list(units)


def _top_k_hits(retrieved_ids: Sequence[str], gold_ids: Gold, k: int) -> tuple[int, int]:
    """(gold units with an id in the top ``k``, distinct gold units)."""
    k = check_positive_int(k, "k")
    units = gold_units(gold_ids)
    if not units:
        raise ValueError("gold_ids is empty; a question needs at least one gold passage")
    top = set(retrieved_ids[:k])
    return sum(not unit.isdisjoint(top) for unit in units), len(units)


def recall_at_k(retrieved_ids: Sequence[str], gold_ids: Gold, k: int) -> float:
    """Share of the gold passages found in the top ``k`` (``|gold ∩ top-k| / |gold|``).

    This is the Recall@k of the HippoRAG papers. A gold entry that is a collection of ids
    (alternatives, e.g. the chunks holding one gold passage) counts once, found when any of
    its ids is.

    >>> recall_at_k(["a", "b", "c"], ["c", "d"], k=3)
    0.5
    >>> recall_at_k(["x", "c2"], [("c1", "c2"), "d"], k=2)
    0.5
    """
    hits, total = _top_k_hits(retrieved_ids, gold_ids, k)
    return hits / total


def all_recall_at_k(retrieved_ids: Sequence[str], gold_ids: Gold, k: int) -> float:
    """1.0 when every gold passage (unit) is in the top ``k``, else 0.0.

    >>> all_recall_at_k(["a", "b", "c"], ["a", "c"], k=2)
    0.0
    """
    hits, total = _top_k_hits(retrieved_ids, gold_ids, k)
    return float(hits == total)


def last_hop_recall_at_k(
    retrieved_ids: Sequence[str], gold_ids_in_hop_order: Gold, k: int
) -> float:
    """1.0 when the last-hop gold passage (the hardest to reach) is in the top ``k``, else 0.0.

    Only meaningful for hop-ordered gold (``QAExample.hop_ordered``); the last entry may be a
    collection of alternative ids.

    >>> last_hop_recall_at_k(["b", "x"], ["a", "b"], k=1)
    1.0
    """
    k = check_positive_int(k, "k")
    if not gold_ids_in_hop_order:
        raise ValueError(
            "gold_ids_in_hop_order is empty; a question needs at least one gold passage"
        )
    last = gold_units(gold_ids_in_hop_order[-1:])[0]
    return float(not last.isdisjoint(retrieved_ids[:k]))


def recall_curve(
    per_question_rankings: Sequence[Sequence[str]],
    golds: Sequence[Gold],
    ks: Iterable[int],
) -> dict[int, float]:
    """Mean :func:`recall_at_k` over questions for each ``k`` in ``ks``.

    >>> recall_curve([["a", "b"], ["x", "c"]], [["a"], ["c"]], ks=[1, 2])
    {1: 0.5, 2: 1.0}
    """
    if len(per_question_rankings) != len(golds):
        raise ValueError(
            f"per_question_rankings has {len(per_question_rankings)} entries but golds has "
            f"{len(golds)}; give one ranking per question"
        )
    if not golds:
        raise ValueError("no questions: per_question_rankings and golds are empty")
    return {
        k: float(
            np.mean(
                [recall_at_k(r, g, k) for r, g in zip(per_question_rankings, golds, strict=True)]
            )
        )
        for k in ks
    }


# --- answers ------------------------------------------------------------------------------------
# normalize_answer (SQuAD/HotpotQA normalisation) lives in rag_multihop.text: methods use it too.


def _as_answers(answers: str | Sequence[str]) -> list[str]:
    items = [answers] if isinstance(answers, str) else list(answers)
    if not items:
        raise ValueError("answers is empty; give at least one gold answer")
    return items


def exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer.

    >>> exact_match("an apple", ["Apple", "pear"])
    1.0
    """
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in _as_answers(answers)))


def _token_f1(prediction: str, answer: str) -> float:
    """HotpotQA token F1 on normalised strings, with its yes/no/noanswer rule."""
    pred, gold = normalize_answer(prediction), normalize_answer(answer)
    if (pred in _SPECIAL_ANSWERS or gold in _SPECIAL_ANSWERS) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: str | Sequence[str]) -> float:
    """Best HotpotQA token F1 over the gold answers.

    "yes", "no" and "noanswer" score only on an exact (normalised) match, as in the official
    HotpotQA evaluation.

    >>> f1_score("Paris France", ["Paris"]), f1_score("yes", ["yes indeed"])
    (0.6666666666666666, 0.0)
    """
    return max(_token_f1(prediction, a) for a in _as_answers(answers))


# --- paired comparisons -------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap of ``mean(a) - mean(b)``: the observed difference, its percentile
    confidence interval ``[low, high]``, a two-sided p-value and the number of questions."""

    mean_diff: float
    low: float
    high: float
    p_value: float
    n: int
    confidence: float
    n_resamples: int


@dataclass(frozen=True)
class WinLoss:
    """Questions where ``a`` scored higher (wins), lower (losses) or the same (ties) as ``b``."""

    wins: int
    losses: int
    ties: int


def _paired_arrays(a: Values, b: Values) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"a and b must be 1-D sequences, got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"a and b must score the same questions: got {x.size} and {y.size} values")
    if x.size == 0:
        raise ValueError("a and b are empty; give one value per question")
    for name, values in (("a", x), ("b", y)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(
                f"{name} has NaN or inf values at positions {bad[:5].tolist()} "
                f"({bad.size} in all); every value must be finite"
            )
    return x, y


def paired_bootstrap(
    a: Values,
    b: Values,
    *,
    n_resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Paired bootstrap over questions of the difference in means between systems ``a`` and ``b``.

    Resamples questions with replacement ``n_resamples`` times (deterministic for a ``seed``).
    ``low``/``high`` are the percentile interval at ``confidence``. ``p_value`` is two-sided:
    twice the share of resampled differences that are zero or of the opposite sign to
    ``mean_diff`` (1.0 when ``mean_diff`` is 0), capped at 1; its resolution is
    ``2 / n_resamples``, so 0.0 means "below that".

    >>> r = paired_bootstrap([1, 1, 1, 0], [0, 1, 0, 0], n_resamples=2000)
    >>> r.mean_diff, r.n, r.low <= r.mean_diff <= r.high
    (0.5, 4, True)
    """
    x, y = _paired_arrays(a, b)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    diff = x - y
    n = diff.size
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // n)
    means = np.concatenate(
        [
            diff[rng.integers(0, n, size=(min(block, n_resamples - start), n))].mean(axis=1)
            for start in range(0, n_resamples, block)
        ]
    )
    mean_diff = float(diff.mean())
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    if mean_diff == 0.0:
        p_value = 1.0
    else:
        opposite = means <= 0 if mean_diff > 0 else means >= 0
        p_value = min(1.0, 2.0 * float(opposite.mean()))
    return BootstrapResult(
        mean_diff=mean_diff,
        low=float(low),
        high=float(high),
        p_value=p_value,
        n=n,
        confidence=float(confidence),
        n_resamples=n_resamples,
    )


def wins_losses(a: Values, b: Values) -> WinLoss:
    """Count per-question wins, losses and exact ties of ``a`` against ``b``.

    >>> wins_losses([1, 0.5, 0], [0, 0.5, 1])
    WinLoss(wins=1, losses=1, ties=1)
    """
    x, y = _paired_arrays(a, b)
    return WinLoss(wins=int((x > y).sum()), losses=int((x < y).sum()), ties=int((x == y).sum()))
