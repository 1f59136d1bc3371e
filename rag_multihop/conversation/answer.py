"""Extractive answers: the best supporting sentence of each hop, cited by its card number.

A tiny model cannot be trusted to answer; the retrieved passages can. :func:`extractive_answer`
reads the passages a method put in each step of its chain (hop 1, hop 2, as its trace says),
picks hop 1's sentence that best supports the question and then the best sentence of the
passage it leads to, each ending with ``[n]``, the number of the passage's card. A method
that names no hops gives its best sentence and, from another passage, the one it leads to.

A sentence scores by the question's content words it holds (the question's names count
more), plus what the question asks for: a year for ``when``/``what year``/``earlier``, a place
for ``where``/``which town``, a name for ``who``, a number for ``how many``/``longer``; a
sentence that names another retrieved passage (the link to the next hop) scores higher, and
the second sentence comes from the passage the first one names.

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

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(“‘])")
_ABBREVIATION = re.compile(r"(?:\b[A-Z]\.|\b(?:St|Dr|Mr|Mrs|Ms|Jr|Sr|Co|No|vs|F\.C)\.)$")
_YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
_NUMBER = re.compile(r"\d")
_PLACE = re.compile(r"\b(?:in|at|from|near)\s+(?:the\s+)?[A-Z]")
_ASKS = {
    "year": re.compile(
        r"^\s*(?:when|in what year|in which year|what year|which year)\b|"
        r"\b(?:first|earlier|earliest|older|oldest|later|latest|newer|younger)\b",
        re.I,
    ),
    "place": re.compile(
        r"^\s*(?:where|in which (?:town|city|country|village|region|river valley|valley)|"
        r"which (?:town|city|country|village|river)|in what (?:town|city|country))\b",
        re.I,
    ),
    "name": re.compile(r"^\s*(?:who|whom|whose)\b", re.I),
    "number": re.compile(
        r"^\s*how (?:many|much|long|tall|old|large|big)\b|"
        r"\b(?:longer|larger|bigger|taller|higher|capacity)\b",
        re.I,
    ),
}
"""What a question asks for, read from its words (the first rule that matches)."""
NAME_WEIGHT = 1.5
"""A word of one of the question's names counts this much (other content words 1)."""
BONUS = 1.5
"""Added when a sentence holds what the question asks for, and when it names a passage
of the next hop."""


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


def sentence_score(
    question: str, sentence: str, links: Sequence[str] = (), subject: str = ""
) -> float:
    """How well ``sentence`` supports ``question``: its content words that the question
    holds (the words of the question's names count :data:`NAME_WEIGHT`), the words of
    ``subject`` (the passage's title: every sentence of a passage is about it) counted as
    held, plus :data:`BONUS` when it holds what the question asks for (:func:`asks_for`)
    and :data:`BONUS` for each of ``links`` it names, at most two (titles of other retrieved
    passages: a sentence that leads on).

    >>> q = "When did Marit Hallendor die?"
    >>> sentence_score(q, "Marit Hallendor (1839–1911) was an industrialist.")
    4.5
    >>> sentence_score(q, "She endowed a school.")
    0.0
    >>> sentence_score(q, "She endowed a school.", subject="Marit Hallendor")
    3.0
    """
    name_words = {stem(w) for name in names_in(question) for w in words(name)}
    found = set(content_words(sentence)) | set(content_words(subject))
    matched = (w for w in content_words(question) if w in found)
    score = sum((NAME_WEIGHT if w in name_words else 1.0 for w in matched), 0.0)
    if answers_kind(question, sentence):
        score += BONUS
    lowered = sentence.lower()
    named = sum(1 for link in links if link and link.lower() in lowered)
    return score + BONUS * min(named, 2)


def answers_kind(question: str, sentence: str) -> bool:
    """Whether ``sentence`` holds what ``question`` asks for: a year, a place (``in`` or
    ``at`` a name), a name the question does not hold, or a number."""
    kind = asks_for(question)
    if kind == "year":
        return bool(_YEAR.search(sentence))
    if kind == "place":
        return bool(_PLACE.search(sentence))
    if kind == "name":
        own = {n.lower() for n in names_in(question)}
        return any(n.lower() not in own for n in names_in(sentence))
    return kind == "number" and bool(_NUMBER.search(sentence))


def _best(
    question: str, steps: Sequence[Step], links: Sequence[str], *, opening: bool
) -> Support | None:
    """The best-scoring sentence of ``steps`` with a score above 0; with ``opening``, a
    step's first sentence when nothing scores."""
    best: Support | None = None
    for item in steps:
        for position, sentence in enumerate(sentences(item.passage.text)):
            score = sentence_score(question, sentence, links, item.passage.title)
            better = score > 0 and (best is None or score > best.score)
            if better or (opening and best is None and position == 0):
                best = Support(item.number, item.passage.id, item.step, sentence, score)
    return best


def _named_in(text: str, steps: Sequence[Step]) -> list[Step]:
    """The steps whose passage title ``text`` names, in the order ``text`` names them."""
    lowered = text.lower()
    found = [(lowered.find(s.passage.title.lower()), s) for s in steps if s.passage.title]
    return [s for at, s in sorted(found, key=lambda f: f[0]) if at >= 0]


def _cite(sentence: str, number: int) -> str:
    """``sentence`` with ``[number]`` before its closing punctuation."""
    body = sentence.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else ""
    return f"{body[: len(body) - len(end)]} [{number}]{end}"


def extractive_answer(question: str, steps: Sequence[Step]) -> ExtractiveAnswer:
    """Hop 1's best sentence, then the best sentence of the passage it leads to, each
    ending with its card's ``[n]``; no passage: an empty answer.

    The first sentence comes from the hop-1 passages (a method without hops: from any
    passage), preferring one that names other retrieved passages. The second comes from
    the passage that sentence leads to: the trace's hop 2 when the sentence names it, else
    a passage the question names (the other side of a comparison), else the first passage
    the sentence names; it is
    kept when it matches the question at all. A sentence that leads nowhere is the whole
    answer, so a one-hop question gets one sentence.
    """
    if not steps:
        return ExtractiveAnswer("", ())
    hop1 = [s for s in steps if s.step == "hop 1"]
    hop2 = [s for s in steps if s.step == "hop 2"]
    first_pool = hop1 or sorted(steps, key=lambda s: s.number)
    others = [s for s in steps if s not in first_pool] or [
        s for s in first_pool if s is not first_pool[0]
    ]
    first = _best(question, first_pool, [s.passage.title for s in others], opening=True)
    if first is None:
        return ExtractiveAnswer("", ())
    rest = [s for s in others if s.passage.id != first.passage_id]
    named = _named_in(first.sentence, rest)
    asked = _named_in(question, rest)
    linked = [s for s in hop2 if s in named] or asked[:1] or named[:1]
    second = _best(question, linked, (), opening=False)
    supports = [first] if second is None else [first, second]
    text = " ".join(_cite(s.sentence, s.number) for s in supports)
    return ExtractiveAnswer(text, tuple(supports))
