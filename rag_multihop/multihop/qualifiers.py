"""A question's qualified names: *David Elliot (Illustrator)*, *Margaret of Bavaria,
Marchioness of Mantua*.

A question often writes a name with what tells its bearer from namesakes: a parenthesis
(*Seven Women (1944 Film)*) or an apposition after a comma (*Lionel Sackville-West, 3rd
Baron Sackville*). A titled corpus spells the same qualifier in its titles, and the title
index matches it; an untitled one knows each passage by the name its text opens with, so
every namesake is named alike. :func:`qualifiers` finds the words qualifying each place of
a question and :func:`narrowed` keeps, of a mention's referents, those whose text holds
most of them (all of them when none holds any, or when the mention names one passage); a
one-word mention inside a parenthesis (*(Film)*) qualifies, it names nothing.

Example:
    >>> qualifiers("Who is David Elliot (Illustrator)'s wife?")
    {4: ('illustrator',)}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rag_multihop.multihop.links import STOPWORDS
from rag_multihop.multihop.titles import Mention, TextMentions, title_tokens

_PARENTHESIS = re.compile(r"\(([^()]+)\)")
_APPOSITION = re.compile(
    r",\s+((?:[A-Z0-9][^\s,?()]*)(?:\s+(?:[A-Z0-9][^\s,?()]*|of|the|de|von|van|du|la))*)"
)


LEAD_TOKENS = 40
"""The words of a passage's opening read for a qualifier: where a text says what its subject
is (*a 1944 Argentine drama film*), before it names others."""


def _lead_tokens(text: str) -> list[tuple[str, str]]:
    """The first :data:`LEAD_TOKENS` title tokens of ``text`` (its first characters read)."""
    return title_tokens(text[: LEAD_TOKENS * 25])[:LEAD_TOKENS]


def _at_tokens(text: str, matches: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """``(token position, group)`` of ``matches`` (``(character start, group)`` in order):
    the tokens before each counted once, segment by segment (linear in ``text``)."""
    position, read = 0, 0
    for start, group in matches:
        position += len(title_tokens(text[read:start]))
        read = start
        yield position, group


def qualifiers(text: str) -> dict[int, tuple[str, ...]]:
    """Token position (in :func:`~rag_multihop.multihop.titles.title_tokens` of ``text``)
    where a qualifier starts → its content tokens: a parenthesis, or a run of capitalised
    words after a comma (small connectors such as *of* inside it).

    >>> qualifiers("Who is the mother of Anna Dorothea, Abbess Of Quedlinburg?")
    {7: ('abbess', 'quedlinburg')}
    """
    matches = sorted(
        (match.start(), match.group(1))
        for pattern in (_PARENTHESIS, _APPOSITION)
        for match in pattern.finditer(text)
    )
    found: dict[int, tuple[str, ...]] = {}
    for position, qualifier in _at_tokens(text, matches):
        words = tuple(
            token
            for _, token in title_tokens(qualifier)
            if token not in STOPWORDS and (len(token) > 1 or token.isdigit())
        )
        if words:
            found.setdefault(position, words)
    return found


def parenthesised(text: str) -> frozenset[int]:
    """Token positions (in :func:`~rag_multihop.multihop.titles.title_tokens` of ``text``)
    inside a parenthesis.

    >>> sorted(parenthesised("Who directed Seven Women (1944 Film)?"))
    [4, 5]
    """
    matches = [(match.start(), match.group(1)) for match in _PARENTHESIS.finditer(text)]
    inside: set[int] = set()
    for position, content in _at_tokens(text, matches):
        inside.update(range(position, position + len(title_tokens(content))))
    return frozenset(inside)


def narrowed(found: TextMentions, question: str, text_of: Callable[[int], str]) -> TextMentions:
    """The mentions ``found`` in ``question``, each that names several passages and is
    followed by a qualifier narrowed to the referents whose text (``text_of(row)``) holds,
    in its first :data:`LEAD_TOKENS` words, the most of the qualifier's words not already
    in the mention (kept whole when none holds any); a one-word mention inside a
    parenthesis (*(Film)*) dropped: it qualifies a name, it names nothing.

    >>> from rag_multihop.multihop.titles import TitleIndex
    >>> texts = ["David Elliot is a Scottish footballer.", "David Elliot is an illustrator."]
    >>> question = "Is David Elliot (Illustrator) alive?"
    >>> found = TitleIndex([["a", "David Elliot"], ["b", "David Elliot"]]).mentions(question)
    >>> [sorted(m.referents) for m in narrowed(found, question, texts.__getitem__).mentions]
    [[1]]
    """
    qualified, inside = qualifiers(question), parenthesised(question)
    mentions = []
    for mention in found.mentions:
        if mention.start in inside and " " not in mention.text:
            continue  # a qualifier's one word (*(Film)*) is no name of its own
        words = [w for w in qualified.get(mention.end, ()) if w not in mention.text.split()]
        if len(mention.referents) > 1 and words:
            support = {
                row: len(set(words) & {t for _, t in _lead_tokens(text_of(row))})
                for row in mention.referents
            }
            best = max(support.values())
            if best > 0:
                rows = [row for row, count in support.items() if count == best]
                mention = Mention(
                    mention.start, mention.end, mention.text, {r: 1 / len(rows) for r in rows}
                )
        mentions.append(mention)
    return TextMentions(tuple(mentions), found.tokens)
