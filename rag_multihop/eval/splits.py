"""Splits of a dataset's questions: a fixed, seeded tune/test split, so that defaults can be
chosen on ``tune`` and reported on ``test`` (``rag-multihop bench --split tune|test|all``).

The split is by question id (a seeded permutation of the ids, sorted first, so it does not
depend on file order): ``tune`` is the first half, ``test`` the rest. The dataset of one half
keeps the other half's questions in ``held_out`` (methods that train use them; the harness
never evaluates them). The corpus is kept whole,
so retrieval runs over the same passages in both halves. :class:`FoldRouter` routes each
query to the object built for its fold (methods that train on held-out folds).

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> from rag_multihop.eval.datasets import Dataset, QAExample
    >>> corpus = Corpus([Passage("p", "text")])
    >>> questions = tuple(QAExample(f"q{i}", "?", ("a",), ("p",), False) for i in range(6))
    >>> data = Dataset("toy", corpus, questions, "native")
    >>> tune, test = split_dataset(data, "tune"), split_dataset(data, "test")
    >>> len(tune.questions), len(test.questions), tune.name, test.split
    (3, 3, 'toy[tune]', 'test')
    >>> test.held_out == tune.questions
    True
    >>> sorted(q.id for q in tune.questions + test.questions) == sorted(q.id for q in questions)
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Generic, TypeVar

import numpy as np

from rag_multihop.eval.datasets import Dataset
from rag_multihop.types import Query

T = TypeVar("T")

SPLITS = ("all", "tune", "test")
SPLIT_SEED = 20261124


def split_dataset(dataset: Dataset, split: str, *, seed: int = SPLIT_SEED) -> Dataset:
    """``dataset`` with only the questions of ``split`` (``all`` returns it unchanged)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if split == "all":
        return dataset
    ids = sorted(q.id for q in dataset.questions)
    order = np.random.default_rng(seed).permutation(len(ids))
    half = (len(ids) + 1) // 2
    chosen = {ids[i] for i in (order[:half] if split == "tune" else order[half:])}
    questions = tuple(q for q in dataset.questions if q.id in chosen)
    if not questions:
        raise ValueError(
            f"split {split!r} of dataset {dataset.name!r} has no questions: the dataset has "
            f"{len(ids)} question(s), and each half needs one (use split 'all', or more "
            "questions)"
        )
    held_out = tuple(q for q in dataset.questions if q.id not in chosen)
    return replace(
        dataset,
        name=f"{dataset.name}[{split}]",
        questions=questions,
        split=split,
        held_out=held_out,
    )


class FoldRouter(Generic[T]):
    """Routes each query to the object built for its question's fold (held-out protocols).

    >>> router = FoldRouter([(["q1"], "model-0"), (["q2", "q3"], "model-1")])
    >>> router.route(Query("?", id="q3")), router.values()
    ('model-1', ['model-0', 'model-1'])
    >>> router.route(Query("?", id="q9"))
    Traceback (most recent call last):
    ...
    ValueError: query id 'q9' is not a question of this benchmark
    """

    def __init__(self, folds: Iterable[tuple[Iterable[str], T]]) -> None:
        self._items: list[T] = []
        self._by_question: dict[str, T] = {}
        for question_ids, item in folds:
            self._items.append(item)
            self._by_question.update(dict.fromkeys(question_ids, item))

    def route(self, query: Query) -> T:
        """The object of ``query``'s fold; unknown ids raise ``ValueError``."""
        try:
            return self._by_question[str(query.id)]
        except KeyError:
            raise ValueError(f"query id {query.id!r} is not a question of this benchmark") from None

    def values(self) -> list[T]:
        """One object per fold, in fold order."""
        return list(self._items)
