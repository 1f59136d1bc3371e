"""Names in a question or a passage, as written, read with the graph's label-free extractor.

- :func:`names_in`: the capitalised names of a text (``"Veldmark Ropeworks"``), found by
  :class:`~rag_multihop.graph.HeuristicExtractor` and given back as the text writes them;
- :func:`content_words`: the words that carry a question's content (no stop words, question
  words or pronouns), lower case and lightly stemmed, for comparing two phrasings;
- :func:`about_a_person`: whether a passage is about a person (a life span or personal
  pronouns), so ``she`` is resolved to a person and ``it`` to a thing.

Example:
    >>> names_in("Where was the founder of Veldmark Ropeworks born?")
    ['Veldmark Ropeworks']
    >>> content_words("Where was the founder of Veldmark Ropeworks born?")
    ['found', 'veldmark', 'ropework', 'born']
    >>> about_a_person("Marit Hallendor (1839–1911) was an industrialist. She endowed a school.")
    True
"""

from __future__ import annotations

import re

from rag_multihop.graph.extract import HeuristicExtractor
from rag_multihop.text import visible

_EXTRACTOR = HeuristicExtractor(include_numbers=False)
_WORD = re.compile(r"[^\W_][\w'’&-]*", re.UNICODE)

STOP_WORDS = frozenset(
    """a an the of in on at to for from by with as and or but not no is are was were be been
    being do does did done has have had having can could would will shall should may might
    must that this these those there here it its it's he she him her his hers they them their
    theirs we us our you your i me my what which who whom whose when where why how whether
    than then also too very much many more most some any each other such one two same about
    into onto over under after before during while so if name tell give list please""".split()  # noqa: SIM905 - a word list reads better as text
)
"""Words that carry no content of their own in a question."""

_SUFFIXES = ("ings", "ing", "ers", "er", "ed", "es", "s")


def stem(word: str) -> str:
    """A light stem for comparing phrasings (not a word): lower case, a common English
    suffix removed when three or more letters remain, the same way on both sides.

    >>> [stem(w) for w in ("Founded", "founder", "river", "rivers", "born", "was")]
    ['found', 'found', 'riv', 'riv', 'born', 'was']
    """
    word = word.lower().replace("’", "'").removesuffix("'s").strip("'")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    """The words of ``text`` as written (``&`` and inner hyphens/apostrophes kept)."""
    return _WORD.findall(visible(text or ""))


def content_words(text: str) -> list[str]:
    """The stems of ``text``'s content words, in order, each once."""
    kept = (stem(w) for w in words(text) if w.lower() not in STOP_WORDS)
    return list(dict.fromkeys(w for w in kept if w))


def names_in(text: str) -> list[str]:
    """The names in ``text`` as it writes them, in order, each once (a leading article is
    left out, as the graph's entity keys leave it out)."""
    text = visible(text or "")
    found: list[str] = []
    for key in _EXTRACTOR.extract([text])[0]:
        tokens = (r"[.'’]?".join(map(re.escape, token)) for token in key.split())
        pattern = r"(?<!\w)" + r"[\W_]+".join(tokens) + r"\.?(?!\w)"
        match = re.search(pattern, text, flags=re.IGNORECASE)
        if match:
            found.append(match.group())
    return list(dict.fromkeys(found))


_LIFE_SPAN = re.compile(r"\(\s*(?:born\s+)?\d{3,4}\s*[–—-]\s*\d{3,4}\s*\)|\(born\b|\bborn\b", re.I)
_HE = re.compile(r"\b(?:he|his|him|himself)\b", re.IGNORECASE)
_SHE = re.compile(r"\b(?:she|her|hers|herself)\b", re.IGNORECASE)
_VESSEL = re.compile(r"\b(?:ship|vessel|boat|yacht|steamer|liner|frigate)\b", re.IGNORECASE)


def about_a_person(text: str) -> bool:
    """Whether ``text`` is about a person: its opening (first 200 characters) gives a life
    span (``(1839–1911)``, ``(born 1950)``) or a birth, or it says ``he``/``his`` at least
    twice, or ``she``/``her`` at least twice and is not about a ship (ships are "she").

    >>> about_a_person("MV Serwin Star was a ship. She was fast; she was scrapped in 1963.")
    False
    """
    text = text or ""
    if _LIFE_SPAN.search(text[:200]) or len(_HE.findall(text)) >= 2:
        return True
    return len(_SHE.findall(text)) >= 2 and not _VESSEL.search(text)
