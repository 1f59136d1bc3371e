"""LLM-free judging signals as pure functions: similarity mapping and title mentions.

What an LLM judge reads from the texts, "this candidate is the page of someone the bridge
names", has a cheap stand-in in encyclopedic corpora: the candidate's **title is mentioned**
in the bridge passage (a hyperlink in all but name), or in the question (comparison
questions name both sides). Titles are compared as normalised entity keys
(:func:`~rag_multihop.graph.extract.normalize_entity`), whole words only, with a trailing
disambiguation in parentheses dropped ("Mercury (planet)" -> "mercury").

Example:
    >>> title_key("The Beatles (band)")
    'beatles'
    >>> mentions(["The Beatles (band)", "Liverpool", "Ox"], "The Beatles formed in Liverpool.")
    array([1., 1., 0.])
    >>> to_unit(np.array([-1.0, 0.0, 1.0]))
    array([0. , 0.5, 1. ])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from rag_multihop.graph.extract import normalize_entity

MIN_KEY_CHARS = 3
"""Title keys shorter than this never count as mentioned (too ambiguous)."""

_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")


@lru_cache(maxsize=65_536)
def title_key(title: str) -> str:
    """The normalised form of a title, without a trailing ``(...)`` disambiguation
    (remembered: a corpus's titles come back in every pool)."""
    return normalize_entity(_DISAMBIGUATION.sub("", title))


def mentions(titles: Sequence[str], text: str, *, part_of: str = "") -> np.ndarray:
    """1.0 for each title whose key occurs in ``text`` as whole words, else 0.0.

    A title that is only a part of ``part_of`` (the bridge's own title: "Wedding" inside
    "Polish Wedding") is not counted, since every mention of the bridge would match it.

    >>> mentions(["Wedding", "Theresa Connelly"], "Polish Wedding, by Theresa Connelly",
    ...          part_of="Polish Wedding").tolist()
    [0.0, 1.0]
    """
    haystack = f" {normalize_entity(text)} "
    whole = f" {title_key(part_of)} " if part_of else ""
    found = []
    for key in (title_key(t) for t in titles):
        inside = bool(whole) and f" {key} " in whole and whole.strip() != key
        found.append(
            1.0 if len(key) >= MIN_KEY_CHARS and f" {key} " in haystack and not inside else 0.0
        )
    return np.array(found, dtype=np.float64)


def to_unit(values: np.ndarray) -> np.ndarray:
    """Cosine-like values in [-1, 1] mapped to [0, 1] (float error clipped)."""
    return np.clip((np.asarray(values, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)
