"""Extractive answers: the best supporting sentence of each hop, cited by its card number.

A tiny model cannot be trusted to answer; the retrieved passages can. :func:`extractive_answer`
reads the passages a method put in each step of its chain (hop 1, hop 2, as its trace says),
picks in each step the sentence that best supports the question, and joins them in chain
order, each ending with ``[n]``, the number of the passage's card. A method that names no
hops gives its two best sentences from different passages of its ranking.

A sentence scores by the question's content words it holds (the question's names count
double), plus what the question asks for: a year for ``when``/``what year``, a place for
``where``/``which town``, a name for ``who``, a number for ``how many``; a hop-1 sentence that
names a hop-2 passage (the link between the hops) scores higher.

Example:
    >>> from rag_multihop import Passage
    >>> hop1 = Passage("v", "Veldmark Ropeworks was founded in 1868 by Marit Hallendor. It "
    ...                "closed in 1974.", "Veldmark Ropeworks")
    >>> hop2 = Passage("m", "Marit Hallendor was an industrialist. Born in Brennick, she "
    ...                "apprenticed with a sailmaker.", "Marit Hallendor")
    >>> answer = extractive_answer("Where was the founder of Veldmark Ropeworks born?",
    ...                            [Step(1, hop1, "hop 1"), Step(2, hop2, "hop 2")])
    >>> for sentence in sentences(answer.text):
    ...     print(sentence)
    Veldmark Ropeworks was founded in 1868 by Marit Hallendor [1].
    Born in Brennick, she apprenticed with a sailmaker [2].
    >>> answer.cited
    (1, 2)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_multihop.conversation.names import content_words, names_in, stem, words
from rag_multihop.types import Passage

HOP_STEPS = ("hop 1", "hop 2")
"""The chain steps an answer takes one sentence from each of, in this order."""
MAX_SENTENCES = 2
"""Sentences in an answer from a method that names no hops."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(“‘])")
_ABBREVIATION = re.compile(r"(?:\b[A-Z]\.|\b(?:St|Dr|Mr|Mrs|Ms|Jr|Sr|Co|No|vs|F\.C)\.)$")
_YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
_NUMBER = re.compile(r"\d")
_PLACE = re.compile(r"\b(?:in|at|from|near|on)\s+(?:the\s+)?[A-Z]")
_ASKS = {
    "year": re.compile(r"^\s*(?:when|in what year|in which year|what year|which year)\b", re.I),
    "place": re.compile(
        r"^\s*(?:where|in which (?:town|city|country|village|region|river valley|valley)|"
        r"which (?:town|city|country|village|river)|in what (?:town|city|country))\b",
        re.I,
    ),
    "name": re.compile(r"^\s*(?:who|whom|whose)\b", re.I),
    "number": re.compile(r"^\s*(?:how (?:many|much|long|tall|old|large|big))\b", re.I),
}
"""What a question asks for, read from its first words."""


@dataclass(frozen=True)
class Step:
    """A passage as its card shows it: the card's number, the passage and its chain step
    (``"hop 1"``, ``"hop 2"``, ``"related"`` or ``"ranked"``)."""

    number: int
    passage: Passage
    step: str


@dataclass(frozen=True)
class Support:
    """One sentence of an answer: the card it comes from, its step and its score."""

    number: int
    passage_id: str
    step: str
    sentence: str
    score: float


@dataclass(frozen=True)
class ExtractiveAnswer:
    """The answer's text (sentences with their ``[n]``) and its sentences."""

    text: str
    supports: tuple[Support, ...]

    @property
    def cited(self) -> tuple[int, ...]:
        """The card numbers the answer cites, in the order it cites them."""
        return tuple(dict.fromkeys(s.number for s in self.supports))


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (not after an initial or a common abbreviation).

    >>> sentences("Born in St. Ives, she sailed. Brennick Athletic F.C. won. J. R. Tolk wrote.")
    ['Born in St. Ives, she sailed.', 'Brennick Athletic F.C. won.', 'J. R. Tolk wrote.']
    """
    pieces: list[str] = []
    for piece in _SENTENCE.split(" ".join((text or "").split())):
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"
        elif piece:
            pieces.append(piece)
    return pieces


def asks_for(question: str) -> str | None:
    """What ``question`` asks for (``"year"``, ``"place"``, ``"name"``, ``"number"``) or ``None``.

    >>> asks_for("In which town was the band formed?"), asks_for("Who directed it?")
    ('place', 'name')
    """
    return next((kind for kind, pattern in _ASKS.items() if pattern.search(question)), None)


def sentence_score(question: str, sentence: str, links: Sequence[str] = ()) -> float:
    """How well ``sentence`` supports ``question``: matched content words (names' words
    count double), plus 1.5 when it holds what the question asks for, plus 1.5 when it
    names one of ``links`` (the titles of the next hop's passages).

    >>> q = "When did Marit Hallendor die?"
    >>> sentence_score(q, "Marit Hallendor (1839–1911) was an industrialist.")
    5.5
    >>> sentence_score(q, "She endowed a school.")
    0.0
    """
    name_words = {stem(w) for name in names_in(question) for w in words(name)}
    found = set(content_words(sentence))
    matched = (w for w in content_words(question) if w in found)
    score = sum((2.0 if w in name_words else 1.0 for w in matched), 0.0)
    kind = asks_for(question)
    own = {n.lower() for n in names_in(question)}
    if (
        (kind == "year" and _YEAR.search(sentence))
        or (kind == "place" and _PLACE.search(sentence))
        or (kind == "name" and any(n.lower() not in own for n in names_in(sentence)))
        or (kind == "number" and _NUMBER.search(sentence))
    ):
        score += 1.5
    lowered = sentence.lower()
    if any(link and link.lower() in lowered for link in links):
        score += 1.5
    return score


def _best(question: str, steps: Sequence[Step], links: Sequence[str]) -> Support | None:
    best: Support | None = None
    for item in steps:
        for position, sentence in enumerate(sentences(item.passage.text)):
            score = sentence_score(question, sentence, links)
            better = best is None or score > best.score
            if (better and score > 0) or (best is None and position == 0):
                best = Support(item.number, item.passage.id, item.step, sentence, score)
    return best


def _cite(sentence: str, number: int) -> str:
    """``sentence`` with ``[number]`` before its closing punctuation."""
    body = sentence.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else ""
    return f"{body[: len(body) - len(end)]} [{number}]{end}"


def extractive_answer(question: str, steps: Sequence[Step]) -> ExtractiveAnswer:
    """The best sentence of hop 1 and of hop 2 (or, without hops, the best sentences of
    :data:`MAX_SENTENCES` different passages), each ending with its card's ``[n]``. No
    passage: an empty answer. A sentence that matches nothing of the question is used only
    as a step's opening sentence, when nothing of the step matches better."""
    supports: list[Support] = []
    hops = {name: [s for s in steps if s.step == name] for name in HOP_STEPS}
    if any(hops.values()):
        for name in HOP_STEPS:
            links = [s.passage.title for s in hops["hop 2"]] if name == "hop 1" else []
            best = _best(question, hops[name], links)
            if best is not None:
                supports.append(best)
    else:
        ranked = sorted(steps, key=lambda s: s.number)
        candidates = [b for s in ranked if (b := _best(question, [s], ())) is not None]
        candidates = sorted(candidates, key=lambda b: -b.score)[:MAX_SENTENCES]
        supports = sorted(candidates, key=lambda b: b.number)
    text = " ".join(_cite(s.sentence, s.number) for s in supports)
    return ExtractiveAnswer(text, tuple(supports))
