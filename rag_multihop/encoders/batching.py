"""Length-bucketed batches: texts sorted by token length, each batch padded to its own longest.

A batch of mixed lengths pads every row to its longest one, and a transformer spends the same
work on padding as on text. Sorting by length first (longest first, ties in input order)
makes each batch's rows nearly equally long; the caller computes batch by batch and writes
each result back at its rows, which restores the input order.

Example:
    >>> [rows.tolist() for rows in length_batches([3, 9, 1, 9, 5], 2)]
    [[1, 3], [4, 0], [2]]
    >>> ids, mask = pad_batch([[7, 8, 9], [4]])
    >>> ids.tolist(), mask.tolist()
    ([[7, 8, 9], [4, 0, 0]], [[1, 1, 1], [1, 0, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop.validation import check_positive_int


def length_batches(lengths: Sequence[int] | np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Row indices in batches of at most ``batch_size``, longest texts first (stable)."""
    batch_size = check_positive_int(batch_size, "batch_size")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def pad_batch(token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, attention_mask)``, int64 ``(rows, longest)``: each row's ids then zeros."""
    width = max((len(ids) for ids in token_ids), default=0)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask
