"""LLM-free judging signals as pure functions: similarity mapping and title mentions.

What an LLM judge reads from the texts, "this candidate is the page of someone the bridge
names", has a cheap stand-in in encyclopedic corpora: the candidate's **title is mentioned**
in the bridge passage (a hyperlink in all but name), or in the question (comparison
questions name both sides). Titles are compared as normalised entity keys
(:func:`~rag_multihop.text.title_key`) with the one
:class:`~rag_multihop.text.MentionIndex`, whole words only.

Example:
    >>> title_key("The Beatles (band)")
    'beatles'
    >>> mentions(["The Beatles (band)", "Liverpool", "Ox"], "The Beatles formed in Liverpool.")
    array([1., 1., 0.])
    >>> to_unit(np.array([-1.0, 0.0, 1.0]))
    array([0. , 0.5, 1. ])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop.text import MentionIndex, normalize_entity, title_key

__all__ = ["MIN_KEY_CHARS", "mentions", "title_key", "to_unit"]

MIN_KEY_CHARS = 3
"""Title keys shorter than this never count as mentioned (too ambiguous)."""


def mentions(titles: Sequence[str], text: str, *, part_of: str = "") -> np.ndarray:
    """1.0 for each title whose key occurs in ``text`` as whole words, else 0.0.

    A title that is only a part of ``part_of`` (the bridge's own title: "Wedding" inside
    "Polish Wedding") is not counted, since every mention of the bridge would match it.

    >>> mentions(["Wedding", "Theresa Connelly"], "Polish Wedding, by Theresa Connelly",
    ...          part_of="Polish Wedding").tolist()
    [0.0, 1.0]
    """
    keys = [title_key(t) for t in titles]
    index = MentionIndex(
        (key.split(), i) for i, key in enumerate(keys) if len(key) >= MIN_KEY_CHARS
    )
    found = set(index.find(normalize_entity(text).split()))
    whole = f" {title_key(part_of)} " if part_of else ""
    return np.array(
        [
            1.0
            if i in found and not (whole and f" {key} " in whole and whole.strip() != key)
            else 0.0
            for i, key in enumerate(keys)
        ],
        dtype=np.float64,
    )


def to_unit(values: np.ndarray) -> np.ndarray:
    """Cosine-like values in [-1, 1] mapped to [0, 1] (float error clipped)."""
    return np.clip((np.asarray(values, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)
