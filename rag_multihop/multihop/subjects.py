"""Passage subjects read from the text, for passages whose title does not name them.

An encyclopedic title names its passage's subject; an opaque file name (``doc-3f2a``) or a
chunk's document name does not. For such a passage (no word of its title is in its text,
:func:`title_named_in_text`) the subjects
are the names its sentences open with when a copula follows: ``"Ed Wood is a 1994 film"``,
``"Gus Meins (March 6, 1893 – August 1, 1940), born ..., was a director"``, ``"The Humaya
River is a river"`` (``"Humaya River"``: a leading article is dropped). Pronouns and
sentence adverbials (``He``, ``In 2007``) are not names. A chunk that holds the opening
sentences of several passages gets each of their subjects. The title index then knows a
passage by its title and its subjects, so question names, title links and the pair work on
untitled passages and chunks.

Example:
    >>> text_subjects("Ed Wood is a 1994 film. He was born in 1924. Tim Burton (born 1958) "
    ...               "is a director.")
    ('Ed Wood', 'Tim Burton')
    >>> from rag_multihop import Passage
    >>> passage_names(Passage("x", "Ed Wood is a 1994 film.", "doc-3f2a"))
    ('doc-3f2a', 'Ed Wood')
    >>> passage_names(Passage("x", "Ed Wood is a 1994 film.", "Ed Wood (film)"))
    ('Ed Wood (film)',)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from rag_multihop.multihop.headings import heading_name, split_title
from rag_multihop.multihop.titles import name_key
from rag_multihop.types import Passage

NAMES_CACHE_SIZE = 65536
"""Passages whose names :func:`known_names` remembers."""

MAX_SUBJECTS = 8
"""At most this many subjects are read from one passage (the first ones)."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")
_COPULAS = frozenset(
    {"is", "was", "are", "were", "has", "had", "became", "refers", "remains", "serves", "served"}
)
_ARTICLES = frozenset({"The", "A", "An"})
_CONNECTORS = frozenset(
    {"of", "the", "de", "da", "del", "della", "di", "do", "dos", "von", "van", "der", "den",
     "du", "la", "le", "les", "y", "and", "&", "al", "bin", "ibn", "for", "on", "upon", "in",
     "to", "a", "an", "at"}
)  # fmt: skip
_PRONOUNS = frozenset(
    {"He", "She", "It", "They", "We", "I", "You", "This", "That", "These", "Those", "His", "Her",
     "Its", "Their", "There", "Here", "However", "Although", "Also", "Some", "Many", "Most",
     "Other", "Both", "Each", "All", "Today", "If"}
)  # fmt: skip
_ADVERBIAL = frozenset(
    {"In", "On", "At", "After", "Before", "During", "When", "While", "As", "For", "From", "By",
     "With", "Since", "Following", "According", "Despite", "Under", "Between", "Among",
     "Upon", "Unlike", "Like", "One", "Two"}
)  # fmt: skip
"""Words that open a sentence adverbial (``In 2007,``): such a run is no name when it ends
with a comma or holds a number."""
_JOINERS = frozenset({"and", "also"})
"""Words that may stand between a name and its copula (``X ... and is a diplomat``)."""
_APPOSITIVE_WORDS = 12
"""A copula this many words after a comma-ended name still makes it the subject
(``"Gus Meins, born Gustave Luley, was a director"``)."""


def _clean(word: str) -> str:
    return word.strip(".,;:\"'!?")


def _leading_name(sentence: str) -> str | None:
    """The name ``sentence`` (parentheticals removed) opens with when a copula follows it,
    else ``None``."""
    words = sentence.split()
    start = 1 if words and words[0] in _ARTICLES else 0
    end = start
    while end < len(words):
        word = words[end]
        capital = word[:1].isupper() or word[:1].isdigit()
        if not capital:
            after = end
            while after < len(words) and words[after] in _CONNECTORS:
                after += 1
            if end == start or after == end or after == len(words):
                break
            if not words[after][:1].isupper():
                break
        end += 1
        if word.endswith((",", ";", ":")):
            break
    name_words = [_clean(w) for w in words[start:end]]
    while name_words and name_words[-1] in _CONNECTORS:
        name_words.pop()
    if not name_words or name_words[0] in _PRONOUNS or not name_key(" ".join(name_words)):
        return None
    ends_with_comma = words[end - 1].endswith(",")
    if name_words[0] in _ADVERBIAL and (
        ends_with_comma or any(w[:1].isdigit() for w in name_words)
    ):
        return None
    following = [_clean(w) for w in words[end:]]
    if following[:1] and following[0] in _JOINERS:
        following = following[1:]
    window = _APPOSITIVE_WORDS if ends_with_comma else 1
    if not any(w in _COPULAS for w in following[:window]):
        return None
    return " ".join(name_words)


def _short_forms(name: str) -> list[str]:
    """A person-like name of three to five capitalised words without connectors is also
    known by its first and last word (``John Villiers Farrow`` → ``John Farrow``)."""
    words = name.split()
    if 3 <= len(words) <= 5 and all(w[:1].isupper() and w.isalpha() for w in words):
        return [f"{words[0]} {words[-1]}"]
    return []


def text_subjects(text: str) -> tuple[str, ...]:
    """The names ``text``'s sentences open with when a copula follows (first
    :data:`MAX_SUBJECTS`, without repeats, a leading article dropped; a person-like name
    also by its first and last word)."""
    names: dict[str, None] = {}
    plain = text.strip()
    while True:
        stripped = _PARENTHETICAL.sub("", plain)
        if stripped == plain:
            break
        plain = stripped
    for sentence in _SENTENCE.split(plain):
        name = _leading_name(sentence)
        if name is None:
            continue
        names[name] = None
        names.update(dict.fromkeys(_short_forms(name)))
        if len(names) >= MAX_SUBJECTS:
            break
    return tuple(names)


def title_named_in_text(title: str, text: str) -> bool:
    """Whether ``text`` holds a word of ``title`` (of three letters or more, not a number):
    then the title speaks of what the text does, as encyclopedic titles do, and no subject
    is read; an opaque id or a chunk's document name shares no word with its text.

    >>> title_named_in_text("William I of Württemberg", "William I was King of Wurttemberg.")
    True
    >>> title_named_in_text("doc-3f2a9c", "Ed Wood is a 1994 film.")
    False
    """
    words = set(name_key(text).split())
    return any(
        len(token) >= 3 and not token.isdigit() and token in words
        for token in name_key(title).split()
    )


def passage_names(passage: Passage) -> tuple[str, ...]:
    """The names a passage is known by: its title; the heading of a ``"<file> › <heading>"``
    title when it reads as a name (:func:`~rag_multihop.multihop.headings.heading_name`);
    plus the subjects read from its text when the text holds no word of that heading (of the
    title's file part when no heading names it). Remembered by title and text: the bridge
    judge asks for the same candidates' names query after query.

    >>> passage_names(Passage("n#1", "She was born in Oslo.", "notes › Marit Hallendor"))
    ('notes › Marit Hallendor', 'Marit Hallendor')
    """
    return _names(passage.title, passage.text)


@lru_cache(maxsize=NAMES_CACHE_SIZE)
def _names(title: str, text: str) -> tuple[str, ...]:
    heading = heading_name(title)
    known = (title, heading) if heading else (title,) if title else ()
    named = heading or split_title(title)[0]
    if named and title_named_in_text(named, text):
        return known
    subjects = tuple(s for s in text_subjects(text) if s not in known)
    return (*known, *subjects)


def corpus_names(passages: Sequence[Passage]) -> list[tuple[str, ...]]:
    """:func:`passage_names` of every passage, in order."""
    return [passage_names(p) for p in passages]
