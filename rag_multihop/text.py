"""Text utilities every method shares: entity keys, title keys and one mention index.

- :func:`visible`: a text without the invisible characters that split a word where a reader
  sees none (every word reader of the package reads through it: titles, links, entities,
  BM25, headings, conversation names, bridge key sentences, unrolled sub-questions);
- :func:`normalize_entity`: the canonical key of an entity name (graph entities, LLM
  entities, bridge entities and title keys all meet on it);
- :func:`strip_disambiguation` / :func:`title_key`: a title without its trailing
  ``(...)`` disambiguation, as written / as an entity key;
- :func:`normalize_answer`: SQuAD/HotpotQA answer normalisation (the metrics compare
  answers with it; CoopRAG's reader checks spans against passages with it);
- :class:`MentionIndex`: names as token sequences; :meth:`MentionIndex.find` lists the
  names a text contains as whole, contiguous tokens. Callers choose the tokens: label-free
  association pairs match case-sensitive :func:`word_tokens` over a whole corpus (so that
  "It" the film is not found in every "it"), the bridge judge matches entity keys
  (``normalize_entity(text).split()``) of a few candidate titles.

Example:
    >>> normalize_entity("The Beatles' ")
    'beatles'
    >>> title_key("Mercury (planet)")
    'mercury'
    >>> index = MentionIndex([(["Cape", "Fear"], "film"), (["Fear"], "emotion")])
    >>> index.find(word_tokens("Cape Fear is a thriller; fear sells."))
    ['film', 'emotion']
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

_POSSESSIVE = re.compile(r"'s\b")
_PUNCTUATION = re.compile(r"[^\w\s&-]", re.UNICODE)
_SPACES = re.compile(r"[\s\-]+")
_ARTICLE = re.compile(r"^(the|a|an)\s+")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
_WORD = re.compile(r"\w+")
_ANSWER_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ANSWER_PUNCTUATION = str.maketrans("", "", string.punctuation)
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))


def visible(text: str) -> str:
    """``text`` without soft hyphens, zero-width spaces and joiners, word joiners and
    byte-order marks: characters a page does not show that would split a word in two
    (a PDF's hyphenation point, ``&shy;`` in HTML), so that *Of\u00adfice* reads *Office*.

    >>> visible("The Of\u00adfice Sta\u200bff")
    'The Office Staff'
    """
    return text.translate(_INVISIBLE)


def normalize_entity(name: str) -> str:
    """Canonical form of an entity name: NFKC, lower case, no accents on ASCII letters,
    punctuation dropped, hyphens and runs of spaces as one space, no leading article.

    >>> normalize_entity("  The Beatles' ")
    'beatles'
    >>> normalize_entity("Anhalt-Zerbst's")
    'anhalt zerbst'
    >>> normalize_entity("Jean-Luc Godard")
    'jean luc godard'
    """
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = _POSSESSIVE.sub("", text.replace("’", "'"))
    text = _PUNCTUATION.sub("", text)
    text = _SPACES.sub(" ", text).strip()
    return _ARTICLE.sub("", text)


@lru_cache(maxsize=1 << 18)
def normalize_word(word: str) -> str:
    """:func:`normalize_entity` of one word, memoised (texts repeat their words, and title
    matching normalises every word of every passage).

    >>> normalize_word("Hitchcock's")
    'hitchcock'
    """
    return normalize_entity(word)


def normalize_answer(s: str) -> str:
    """SQuAD/HotpotQA normalisation: lower case, drop punctuation and articles, fix spaces.

    >>> normalize_answer("  The  Cat's hat!")
    'cats hat'
    """
    text = s.lower().translate(_ANSWER_PUNCTUATION)
    return " ".join(_ANSWER_ARTICLES.sub(" ", text).split())


def strip_disambiguation(title: str) -> str:
    """``title`` without a trailing parenthesised disambiguation.

    >>> strip_disambiguation("Cape Fear (1962 film)")
    'Cape Fear'
    """
    return _DISAMBIGUATION.sub("", title)


def title_key(title: str) -> str:
    """The entity key of a title without its disambiguation.

    >>> title_key("The Beatles (band)")
    'beatles'
    """
    return normalize_entity(strip_disambiguation(title))


def word_tokens(text: str) -> list[str]:
    """The word tokens of ``text`` as written (case kept, punctuation dropped).

    >>> word_tokens("Cape Fear (1962 film)")
    ['Cape', 'Fear', '1962', 'film']
    """
    return _WORD.findall(visible(text))


class MentionIndex(Generic[T]):
    """Names as token sequences, each naming one or more targets.

    Args:
        names: ``(tokens, target)`` pairs; a target listed twice under one name counts once,
            empty token sequences are skipped.
    """

    def __init__(self, names: Iterable[tuple[Sequence[str], T]]) -> None:
        by_name: dict[tuple[str, ...], dict[T, None]] = {}
        for tokens, target in names:
            key = tuple(tokens)
            if key:
                by_name.setdefault(key, {})[target] = None
        self._targets = {key: tuple(targets) for key, targets in by_name.items()}
        lengths: dict[str, set[int]] = {}
        for key in self._targets:
            lengths.setdefault(key[0], set()).add(len(key))
        self._lengths = {first: tuple(sorted(n)) for first, n in lengths.items()}

    def __len__(self) -> int:
        return len(self._targets)

    def find(self, tokens: Sequence[str]) -> list[T]:
        """Targets of the names that occur in ``tokens`` (whole, contiguous tokens), once
        each, in order of first occurrence (shorter names first at one position)."""
        found: dict[T, None] = {}
        for i, token in enumerate(tokens):
            for n in self._lengths.get(token, ()):
                for target in self._targets.get(tuple(tokens[i : i + n]), ()):
                    found.setdefault(target)
        return list(found)
