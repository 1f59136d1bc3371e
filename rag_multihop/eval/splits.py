"""A fixed, seeded tune/test split of a dataset's questions, so that defaults can be chosen
on ``tune`` and reported on ``test`` (``rag-multihop bench --split tune|test|all``).

The split is by question id (a seeded permutation of the ids, sorted first, so it does not
depend on file order): ``tune`` is the first half, ``test`` the rest. The dataset of one half
keeps the other half's questions in ``held_out`` (methods that train use them; the harness
never evaluates them). The corpus is kept whole,
so retrieval runs over the same passages in both halves.

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

from dataclasses import replace

import numpy as np

from rag_multihop.eval.datasets import Dataset

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
