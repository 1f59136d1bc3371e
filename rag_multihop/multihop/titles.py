"""Passage titles named in a text: title variants, longest-match spans, one referent per span.

In an encyclopedic corpus a passage's title names its subject, and a text that spells a
title out names that passage (a hyperlink in all but name). :class:`TitleIndex` finds those
names in any text (a question or a passage) with one dictionary look-up per word n-gram, so
the cost is linear in the text, whatever the corpus size.

- **Tokens** are the text's word runs (:func:`title_tokens`), each normalised like the
  entity graph's names (:func:`~rag_multihop.text.normalize_entity`: case, accents,
  possessive ``'s``), after HTML entities are decoded. Titles and texts go through the same
  function, so ``"2011–12 VCU Rams"`` matches whatever the dash became.
- **Variants** of a title (:func:`title_variants`): the whole title; the title without a
  trailing ``(qualifier)`` (``"Cape Fear (1962 film)"`` → ``cape fear``); the head before a
  comma (``"Boston, Lincolnshire"`` → ``boston``). The dropped qualifier is kept.
- **Spans**: n-grams that start with a capitalised word or a digit (in the original text)
  and equal a variant, longest first, never overlapping (``"Shelly Beach, New South Wales"``
  is one span, not also ``New South Wales``).
- **Referents**: a span can name several passages (``"Ed Wood"``: the person and the film).
  Those whose qualifier also occurs in the text are preferred (``"Boston"`` in a text that
  says ``Lincolnshire`` → *Boston, Lincolnshire*); the rest are kept as alternatives.

Example:
    >>> index = TitleIndex(["Ed Wood", "Ed Wood (film)", "Boston", "Boston, Lincolnshire"])
    >>> [(m.text, sorted(m.referents)) for m in index.find("Who directed Ed Wood?")]
    [('ed wood', [0, 1])]
    >>> [(m.text, sorted(m.referents)) for m in index.find("Boston in Lincolnshire")]
    [('boston', [3])]
"""

from __future__ import annotations

import html
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from rag_multihop.multihop.names import name_aliases
from rag_multihop.text import normalize_word, strip_disambiguation, visible
from rag_multihop.validation import check_positive_int

_WORD = re.compile(r"[^\W_]+|&", re.UNICODE)
_QUALIFIER = re.compile(r"\s*\(([^()]*)\)\s*$")

MIN_KEY_CHARS = 3
"""Title keys shorter than this are not looked for (too ambiguous)."""

DEFAULT_MAX_WORDS = 10
"""The longest title, in words, looked for in a text."""


def title_words(text: str) -> list[str]:
    """The words :func:`title_tokens` reads in ``text`` (before normalising them).

    >>> title_words("Will &amp; Grace's")
    ['Will', '&', 'Grace', 's']
    """
    return _WORD.findall(visible(html.unescape(text)))


def title_token(word: str) -> str:
    """The normalised token :func:`title_tokens` makes of one word (empty: the word is
    dropped)."""
    return "and" if word == "&" else normalize_word(word)


def title_tokens(text: str) -> list[tuple[str, str]]:
    """``(word, normalised token)`` pairs of ``text``, HTML entities decoded, ``&`` read as
    ``and`` (titles and texts spell it either way).

    >>> title_tokens("Will &amp; Grace's 2011–12")
    [('Will', 'will'), ('&', 'and'), ('Grace', 'grace'), ('s', 's'), ('2011', '2011'), ('12', '12')]
    """
    pairs = [(word, title_token(word)) for word in title_words(text)]
    return [pair for pair in pairs if pair[1]]


def name_key(text: str) -> str:
    """The normalised tokens of ``text`` joined by spaces (the form titles are matched in).

    >>> name_key("Henriette of France (1727–1752)")
    'henriette of france 1727 1752'
    """
    return " ".join(token for _, token in title_tokens(text))


def title_variants(title: str) -> dict[str, tuple[str, ...]]:
    """Keys a title is recognised by, each with the qualifier keys that key dropped.

    >>> title_variants("Boston, Lincolnshire")
    {'boston lincolnshire': (), 'boston': ('lincolnshire',)}
    >>> title_variants("Cape Fear (1962 film)")
    {'cape fear 1962 film': (), 'cape fear': ('1962 film',)}
    """
    title = html.unescape(title)
    variants: dict[str, tuple[str, ...]] = {name_key(title): ()}
    match = _QUALIFIER.search(title)
    base = strip_disambiguation(title)
    qualifiers = (match.group(1),) if match else ()
    variants.setdefault(name_key(base), qualifiers)
    if "," in base:
        head, tail = base.split(",", 1)
        variants.setdefault(name_key(head), (*qualifiers, tail))
    return {
        key: tuple(q for q in (name_key(x) for x in quals) if q)
        for key, quals in variants.items()
        if len(key) >= MIN_KEY_CHARS
    }


ALIAS = "\x1d"
"""The qualifier that marks a key as an alias of a passage's name
(:func:`~rag_multihop.multihop.names.name_aliases`), not a name it is known by."""


def name_variants(names: str | Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Keys a passage known by ``names`` is found by: every name's :func:`title_variants`,
    then the aliases of each name after the first (the first is the passage's title, the
    others subjects read from its text,
    :func:`~rag_multihop.multihop.subjects.indexed_names`): the other forms people write a
    person's name in (:func:`~rag_multihop.multihop.names.name_aliases`), whose qualifiers
    are :data:`ALIAS` alone. A text that writes an alias names the passage only when no
    passage is known by that key under a name and no other passage shares the alias
    (:meth:`TitleIndex.matches`; a question's alias names them all, up to
    :data:`MAX_QUESTION_REFERENTS` passages). A title is looked for as written: titled
    corpora link as they did.

    >>> name_variants(["doc-1", "Sir Tatton Sykes"])["tatton sykes"] == (ALIAS,)
    True
    """
    known = [names] if isinstance(names, str) else list(names)
    variants: dict[str, tuple[str, ...]] = {}
    for name in known:
        for key, qualifiers in title_variants(name).items():
            variants.setdefault(key, qualifiers)
    for name in known[1:]:
        for alias in name_aliases(strip_disambiguation(html.unescape(name))):
            key = name_key(alias)
            if len(key) >= MIN_KEY_CHARS:
                variants.setdefault(key, (ALIAS,))
    return variants


MAX_QUESTION_REFERENTS = 3
"""At most this many passages a question's name may mean, aliases included."""


@dataclass(frozen=True)
class Mention:
    """A span of a text that names one or more passages.

    Attributes:
        start, end: token positions of the span (``end`` exclusive).
        text: the span's normalised key.
        referents: passage rows the span names, each with weight ``1 / len(referents)``.
    """

    start: int
    end: int
    text: str
    referents: Mapping[int, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "referents", MappingProxyType(dict(self.referents)))


@dataclass(frozen=True)
class TextMentions:
    """The mentions of one text and its normalised tokens (positions index ``tokens``)."""

    mentions: tuple[Mention, ...]
    tokens: tuple[str, ...]


class TitleIndex:
    """Finds the passages whose titles a text names (see the module docstring).

    Args:
        titles: per passage, in corpus order, its title or the names it is known by (a title
            and the subjects read from its text, :mod:`~rag_multihop.multihop.subjects`); an
            empty title is never found.
        max_words: the longest title, in words, looked for.
    """

    def __init__(
        self, titles: Sequence[str | Sequence[str]], *, max_words: int = DEFAULT_MAX_WORDS
    ) -> None:
        self.max_words = check_positive_int(max_words, "max_words")
        by_key: dict[str, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
        for row, names in enumerate(titles):
            for key, qualifiers in name_variants(names).items():
                by_key[key].append((row, qualifiers))
        self._by_key = dict(by_key)
        self._first_words = frozenset(key.split(" ", 1)[0] for key in self._by_key)
        self.size = len(titles)

    @classmethod
    def from_keys(
        cls,
        by_key: dict[str, list[tuple[int, tuple[str, ...]]]],
        size: int,
        *,
        max_words: int = DEFAULT_MAX_WORDS,
    ) -> TitleIndex:
        """The index whose keys ``by_key`` already holds (key → ``(row, qualifiers)`` in
        row order, as the constructor makes them from ``size`` passages' names): an
        indexing engine builds it from the keys its workers read, without re-reading names.
        """
        index = cls([], max_words=max_words)
        index._by_key = by_key
        index._first_words = frozenset(key.split(" ", 1)[0] for key in by_key)
        index.size = size
        return index

    def __len__(self) -> int:
        return self.size

    def keys(self) -> Iterable[str]:
        """Every key a title is recognised by."""
        return self._by_key.keys()

    def tokens_of(self, text: str) -> list[tuple[str, str]]:
        """:func:`title_tokens` of ``text`` (an index built for known texts keeps them)."""
        return title_tokens(text)

    def candidate_spans(
        self, pairs: Sequence[tuple[str, str]], tokens: Sequence[str]
    ) -> Iterator[tuple[int, int, str]]:
        """``(start, end, key)`` of every span of a text's tokens that could name a title:
        it starts with a capitalised word (or a digit) that begins some key, and is at most
        ``max_words`` long (the keys :meth:`matches` looks up).

        >>> index = TitleIndex(["Ed Wood"], max_words=2)
        >>> pairs = title_tokens("Ed Wood was born.")
        >>> list(index.candidate_spans(pairs, [t for _, t in pairs]))
        [(0, 1, 'ed'), (0, 2, 'ed wood')]
        """
        for start, (word, token) in enumerate(pairs):
            if not (word[0].isupper() or word[0].isdigit()) or token not in self._first_words:
                continue
            for end in range(start + 1, min(start + self.max_words, len(pairs)) + 1):
                yield start, end, " ".join(tokens[start:end])

    def mentions(self, text: str, *, aliases_too: bool = False) -> TextMentions:
        """The spans of ``text`` that name titles, in text order, and its tokens
        (``aliases_too``: see :meth:`matches`)."""
        return self.matches(text, aliases_too=aliases_too)[0]

    def matches(
        self, text: str, *, aliases_too: bool = False
    ) -> tuple[TextMentions, tuple[tuple[bool, bool], ...]]:
        """:meth:`mentions` and, per mention, ``(complete, clear)``: every passage its key
        names is a referent (none lost on qualifiers), and no other key found in the text
        overlaps it (it suppressed nothing). An index patches a passage's links without
        reading its text when a referent of such a mention is deleted. ``aliases_too``
        (a question's names): a key also names the passages known by it as an alias.

        >>> found, flags = TitleIndex(["Ed Wood", "Wood"]).matches("Ed Wood was born.")
        >>> [m.text for m in found.mentions], flags
        (['ed wood'], ((True, False),))
        """
        pairs = self.tokens_of(text)
        tokens = tuple(token for _, token in pairs)
        found = [span for span in self.candidate_spans(pairs, tokens) if span[2] in self._by_key]
        found.sort(key=lambda span: (span[0] - span[1], span[0]))
        taken = [False] * len(pairs)
        padded = f" {' '.join(tokens)} "
        starts, ends = sorted(s for s, _, _ in found), sorted(e for _, e, _ in found)
        chosen = []
        for start, end, key in found:
            if any(taken[start:end]):
                continue
            taken[start:end] = [True] * (end - start)
            candidates = self._by_key[key]
            referents = _referents(candidates, padded, aliases_too=aliases_too)
            if not referents:
                continue
            # clear: no other span found overlaps it (spans starting before its end, less
            # those ending before its start: itself alone), in log time, not a scan
            clear = bisect_left(starts, end) - bisect_right(ends, start) == 1
            flags = (len(referents) == len(candidates), clear)
            chosen.append((Mention(start, end, key, referents), flags))
        chosen.sort(key=lambda pair: pair[0].start)
        mentions = tuple(mention for mention, _ in chosen)
        return TextMentions(mentions, tokens), tuple(flags for _, flags in chosen)

    def find(self, text: str) -> list[Mention]:
        """The spans of ``text`` that name titles (:meth:`mentions` without the tokens)."""
        return list(self.mentions(text).mentions)


def _referents(
    candidates: Sequence[tuple[int, tuple[str, ...]]], padded: str, *, aliases_too: bool = False
) -> dict[int, float]:
    """The candidates whose qualifiers occur in the text most often, weighted equally; a
    passage that has the key only as an alias counts when no passage has it as a name and
    it is the only such passage (else none: an ambiguous alias names nobody). With
    ``aliases_too`` (a question, which may mean either) the alias passages count beside
    those named, when there are at most :data:`MAX_QUESTION_REFERENTS` of them."""
    if aliases_too and len(candidates) <= MAX_QUESTION_REFERENTS:
        named = [(row, () if ALIAS in quals else quals) for row, quals in candidates]
    else:
        named = [(row, quals) for row, quals in candidates if ALIAS not in quals]
    if not named:
        return {candidates[0][0]: 1.0} if len(candidates) == 1 else {}
    candidates = named
    support = {row: sum(f" {q} " in padded for q in quals) for row, quals in candidates}
    best = max(support.values())
    rows = [row for row, count in support.items() if count == best]
    return {row: 1.0 / len(rows) for row in rows}
