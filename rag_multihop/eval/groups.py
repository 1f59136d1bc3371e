"""Per-question values averaged per question type and per gold count, in percent.

The bench retrievers that keep traces (``bridge``, ``multihop``) report their diagnostics
this way in ``results.json`` (``by_type``, ``by_gold_count``).

Example:
    >>> from rag_multihop.eval.datasets import QAExample
    >>> a = QAExample("a", "?", ("x",), ("p1", "p2"), hop_ordered=False, type="bridge")
    >>> b = QAExample("b", "?", ("y",), ("p3", "p4"), hop_ordered=False)
    >>> by_type, by_gold = grouped_percentages([(a, {"R@2": 1.0}), (b, {"R@2": 0.5})])
    >>> by_type["all"], by_type["untyped"], by_gold["2 gold"]["R@2"]
    ({'questions': 2, 'R@2': 75.0}, {'questions': 1, 'R@2': 50.0}, 75.0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rag_multihop.eval.datasets import QAExample

UNTYPED = "untyped"
"""The group of questions whose data gives no type."""


def percent(values: Sequence[float]) -> float:
    """Mean of ``values`` in percent, two decimals (NaN when empty)."""
    return round(100.0 * float(np.mean(values)), 2) if len(values) else float("nan")


def grouped_percentages(
    rows: Iterable[tuple[QAExample, Mapping[str, float]]],
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Each row's values averaged per question type (plus ``"all"``) and per gold count.

    Every row of one call has the same keys; each group holds ``questions`` and the mean
    of every key in percent.
    """
    by_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_gold: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for question, row in rows:
        groups = (
            (by_type, "all"),
            (by_type, question.type or UNTYPED),
            (by_gold, f"{len(set(question.gold))} gold"),
        )
        for table, group in groups:
            for key, value in row.items():
                table[group][key].append(value)

    def summary(table: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, Any]]:
        return {
            group: {
                "questions": len(next(iter(values.values()))),
                **{key: percent(v) for key, v in values.items()},
            }
            for group, values in table.items()
        }

    return summary(by_type), summary(by_gold)
