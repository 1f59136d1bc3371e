"""What a question asks of a name: *X's father*, *the director of film X*.

A question that asks for a relation of a named subject (kin, the people who made or lead
it) is answered by what the subject's own passage names: a film's passage names its
director, a person's their father. A passage that in turn names *X* (X's son, a namesake
citing X) is X's neighbour, not the relation asked, yet its link to X is as strong as X's
link to the answer. :func:`asked_relations` finds the question's mentions in that place,
so that the pair counts no link toward such a name's passage: the question reaches X by
its name, and the answer by X's own links.

Works a subject's passage may not list (*Poison's album*, *Roald Dahl's story*) name their
maker instead, so only the nouns of :data:`RELATIONS` count.

Example:
    >>> from rag_multihop.multihop.titles import TitleIndex
    >>> index = TitleIndex(["Rope", "Li Zhong", "Poison"])
    >>> found = index.mentions("Who is Li Zhong's father? Who directed Rope?")
    >>> [found.mentions[i].text for i in sorted(asked_relations(found))]
    ['li zhong']
"""

from __future__ import annotations

from rag_multihop.multihop.links import STOPWORDS
from rag_multihop.multihop.titles import TextMentions

RELATIONS = frozenset(
    """father mother parent parents son sons daughter daughters child children husband wife
    spouse brother brothers sister sisters sibling siblings grandfather grandmother grandson
    granddaughter uncle aunt nephew niece cousin stepfather stepmother stepson stepdaughter
    director directors composer composers performer performers producer producers author
    authors writer writers screenwriter lyricist founder founders creator creators editor
    designer architect developer publisher owner captain coach leader chairman ceo""".split()  # noqa: SIM905
)
"""Relations a subject's passage names (kin, and those who made, founded or lead it)."""

_AFTER_POSSESSIVE = 3
"""Words read after *X's* for the relation (*X's paternal grandmother*, *X's older brother*)."""


def _relation_before(tokens: tuple[str, ...], end: int) -> bool:
    """Whether the words before ``tokens[end]`` (the *of*) end with a relation, *in law*
    read through (*the father-in-law of X*)."""
    k = end - 1
    if k >= 2 and tokens[k] == "law" and tokens[k - 1] == "in":
        k -= 2
    return k >= 0 and tokens[k] in RELATIONS


def _asks_relation(tokens: tuple[str, ...], start: int, end: int) -> bool:
    """Whether the mention at ``tokens[start:end]`` is the subject of an asked relation."""
    if end < len(tokens) and tokens[end] == "s":
        return not RELATIONS.isdisjoint(tokens[end + 1 : end + 1 + _AFTER_POSSESSIVE])
    if start >= 2 and tokens[start - 1] == "of":
        return _relation_before(tokens, start - 1)
    kind = start >= 3 and tokens[start - 2] == "of" and tokens[start - 1] not in STOPWORDS
    return kind and _relation_before(tokens, start - 2)


def asked_relations(found: TextMentions) -> frozenset[int]:
    """Numbers of the mentions whose subject the question asks a relation of: *X's R* (a
    relation among the next :data:`_AFTER_POSSESSIVE` words) or *the R of X* (*of* right
    before X, or before one kind word: *the director of film X*).

    >>> from rag_multihop.multihop.titles import TitleIndex
    >>> index = TitleIndex(["Seven Women", "Keith County"])
    >>> def asked(question):
    ...     return sorted(asked_relations(index.mentions(question)))
    >>> asked("Who is the wife of the director of film Seven Women?")
    [0]
    >>> asked("What is the seat of Keith County?")
    []
    """
    tokens = found.tokens
    return frozenset(
        number
        for number, mention in enumerate(found.mentions)
        if _asks_relation(tokens, mention.start, mention.end)
    )
