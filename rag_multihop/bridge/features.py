"""LLM-free judging signals as pure functions: similarity mapping and title mentions.

What an LLM judge reads from the texts, "this candidate is the page of someone the bridge
names", has a cheap stand-in in encyclopedic corpora: the candidate's **title is mentioned**
in the bridge passage (a hyperlink in all but name), or in the question (comparison
questions name both sides). Titles are compared as normalised entity keys
(:func:`~rag_multihop.text.title_key`) with the one
:class:`~rag_multihop.text.MentionIndex`, whole words only. Where titles are opaque (file
names, document ids), :func:`names_mentioned` compares each passage's names: its title and
the subjects read from its text (:func:`~rag_multihop.multihop.subjects.passage_names`).

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

__all__ = ["MIN_KEY_CHARS", "mentions", "names_mentioned", "title_key", "to_unit"]

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
    return names_mentioned([(t,) for t in titles], text, part_of=(part_of,) if part_of else ())


def names_mentioned(
    names: Sequence[Sequence[str]], text: str, *, part_of: Sequence[str] = ()
) -> np.ndarray:
    """1.0 for each candidate one of whose ``names`` (title, subjects read from its text)
    occurs in ``text`` as whole words, else 0.0; a name that is only a part of one of
    ``part_of`` (the bridge's names) does not count.

    >>> names_mentioned([("doc-2", "Wood"), ("doc-3", "Tim Burton")],
    ...                 "Ed Wood is a film by Tim Burton.", part_of=("doc-1", "Ed Wood")).tolist()
    [0.0, 1.0]
    """
    wholes = [f" {key} " for key in map(title_key, part_of) if key]
    index = MentionIndex(
        (key.split(), (i, key))
        for i, candidate_names in enumerate(names)
        for key in map(title_key, candidate_names)
        if len(key) >= MIN_KEY_CHARS
    )
    found = {
        i
        for i, key in index.find(normalize_entity(text).split())
        if not any(f" {key} " in whole and whole.strip() != key for whole in wholes)
    }
    return np.array([1.0 if i in found else 0.0 for i in range(len(names))], dtype=np.float64)


def to_unit(values: np.ndarray) -> np.ndarray:
    """Cosine-like values in [-1, 1] mapped to [0, 1] (float error clipped)."""
    return np.clip((np.asarray(values, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)
