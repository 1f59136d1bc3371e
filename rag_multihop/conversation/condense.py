"""Follow-up questions made standalone without a language model, and LLM rewrites checked.

A chat's later question often leans on the earlier turns: ``"When did she die?"``, ``"And
where was it founded?"``, ``"What about Halvik Cordage Works?"``. Retrieval needs the
question on its own. :func:`condense` carries the previous turn's names into it, by rules:

- **refers back**: a pronoun or a demonstrative (``she``, ``his``, ``it``, ``they``, ``that
  company``) before any name of the question's own is replaced by the name it most likely
  stands for: for ``he``/``she``/``his``/``her`` the last person the previous answer was
  about, for ``it``/``that X`` the last thing, for ``they`` the last subject;
- **elliptical**: ``"What about X?"`` / ``"And X?"`` re-asks the previous question about X;
- **names nothing**: a question without a name of its own (``"Which river flows there?"``)
  gets the previous turn's subjects appended;
- otherwise the question is **self-contained** and left exactly as it is, so an unrelated
  new question never gets the previous turn's evidence.

With a capable model the chat may ask it to rewrite the follow-up instead;
:func:`check_rewrite` then decides whether the rewrite can be used (a question, about the
new turn, keeping its names and most of its content words), and :func:`condense_checked`
falls back to :func:`condense` when it cannot.

Example:
    >>> first = Turn("Where was the founder of Veldmark Ropeworks born?",
    ...              (Subject("Veldmark Ropeworks"), Subject("Marit Hallendor", person=True)))
    >>> condense("When did she die?", [first]).standalone
    'When did Marit Hallendor die?'
    >>> condense("When was it founded?", [first]).standalone
    'When was Veldmark Ropeworks founded?'
    >>> condense("Who directed The Salt Lantern?", [first]).standalone
    'Who directed The Salt Lantern?'
    >>> check_rewrite("When did she die?", "Marit Hallendor died in 1911.")
    'not a question'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_multihop.conversation.names import STOP_WORDS, content_words, names_in, words

PERSONAL = {
    "he": "subject",
    "she": "subject",
    "him": "object",
    "her": "possessive",  # an object when no content word follows ("who married her?")
    "his": "possessive",
    "hers": "possessive",
}
"""Pronouns that stand for a person, with the form the name takes in their place."""
THING = {"it": "subject", "its": "possessive"}
"""Pronouns that stand for a thing."""
GROUP = {"they": "subject", "them": "object", "their": "possessive", "theirs": "possessive"}
"""Pronouns that stand for a group or a thing named in the plural (a band, a club)."""
DEMONSTRATIVES = ("the same", "that", "this", "these", "those")
"""``that company``, ``this film``: a demonstrative before a noun refers back."""
ELLIPSIS = re.compile(
    r"^\s*(?:and\s+)?(?:what|how)\s+about\s+(?P<rest>.+?)\s*\??\s*$"  # "what about X?"
    r"|^\s*and\s+(?P<only>[^?]+?)\s*\?\s*$",  # "and X?"
    re.IGNORECASE,
)
QUESTION_OPENERS = frozenset(
    """what which who whom whose when where why how is are was were do does did can could
    would will should has have had name list tell give in on at from for by to of and
    since during""".split()  # noqa: SIM905 - a word list reads better as text
)
"""First words of a question (``"In which year ..."`` starts with a preposition)."""
REWRITE_LABEL = re.compile(
    r"^\s*(?:standalone|condensed|rewritten|reformulated|new)?\s*(?:question)?\s*:\s*",
    re.IGNORECASE,
)
MAX_CARRIED = 2
"""At most this many names are carried into a question that names nothing."""
CONDENSE_PROMPT = (
    "Rewrite the follow-up question as one standalone question, using the conversation for "
    "names it refers to. Reply with the question only.\n\nConversation:\n{history}\n\n"
    "Follow-up question: {question}\nStandalone question:"
)
"""What a capable model is asked; its reply goes through :func:`check_rewrite`."""


def condense_prompt(exchanges: Sequence[tuple[str, str]], question: str) -> str:
    """:data:`CONDENSE_PROMPT` with the last three ``(question, answer)`` exchanges.

    >>> prompt = condense_prompt([("Who directed Rope?", "Hitchcock [1].")], "Where was he born?")
    >>> print(prompt.split("Conversation:")[1].strip())
    User: Who directed Rope?
    Assistant: Hitchcock [1].
    <BLANKLINE>
    Follow-up question: Where was he born?
    Standalone question:
    """
    history = "\n".join(f"User: {q}\nAssistant: {a}" for q, a in exchanges[-3:])
    return CONDENSE_PROMPT.format(history=history, question=question)


@dataclass(frozen=True)
class Subject:
    """What an answer was about: a name (a passage's title) and whether it is a person."""

    name: str
    person: bool = False


@dataclass(frozen=True)
class Turn:
    """A previous turn as condensation needs it: the standalone question that was searched
    for, and the subjects of its answer (the passages it cites, in chain order)."""

    question: str
    subjects: tuple[Subject, ...] = ()


@dataclass(frozen=True)
class Condensed:
    """A question made standalone: the question as asked, what is searched for, the names
    carried in from earlier turns, and how it was decided (``"self-contained"``, ``"refers
    back: she"``, ``"elliptical"``, ``"names nothing"``, ``"model rewrite"``, or ``"model
    rewrite refused: <why>; ..."`` when the model's rewrite fell back)."""

    question: str
    standalone: str
    carried: tuple[str, ...]
    how: str

    @property
    def follow_up(self) -> bool:
        """Whether earlier turns were used."""
        return self.standalone != self.question


def _clean(question: str) -> str:
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    return " ".join(question.split())


def _referent(kind: str, turn: Turn) -> str | None:
    """The name a pronoun of ``kind`` (person, thing, group) most likely stands for."""
    subjects = list(reversed(turn.subjects))  # the answer's last step first
    if kind == "person":
        chosen = [s.name for s in subjects if s.person]
    elif kind == "thing":
        chosen = [s.name for s in subjects if not s.person]
    else:
        chosen = [s.name for s in subjects]
    chosen += names_in(turn.question)  # no such subject: the previous question's names
    return chosen[0] if chosen else None


def _form(name: str, form: str) -> str:
    if form == "possessive":
        return f"{name}'" if name.endswith("s") else f"{name}'s"
    return name


_PRONOUNS = sorted({*PERSONAL, *THING, *GROUP}, key=len, reverse=True)
_REFERRING = re.compile(
    rf"\b(?P<pronoun>{'|'.join(_PRONOUNS)})\b"
    rf"|\b(?P<demonstrative>{'|'.join(DEMONSTRATIVES)})\s+(?P<noun>[a-z][\w-]*)\b",
    re.IGNORECASE,
)


def _content_follows(rest: str) -> bool:
    following = words(rest)
    return bool(following) and following[0].lower() not in STOP_WORDS


def _refers_back(question: str, turn: Turn) -> Condensed | None:
    """The question with its first referring expression (before any name of its own)
    replaced by the name it stands for, or ``None`` when it has none."""
    own = names_in(question)
    first_name = min((question.find(n) for n in own), default=len(question))
    for match in _REFERRING.finditer(question):
        if match.start() > first_name:
            return None  # "Who founded X and where was he born?" resolves within itself
        if match["pronoun"]:
            word = match["pronoun"].lower()
            kind, form = (
                ("person", PERSONAL[word])
                if word in PERSONAL
                else ("thing", THING[word])
                if word in THING
                else ("group", GROUP[word])
            )
            if word == "her" and not _content_follows(question[match.end() :]):
                form = "object"
        else:
            if own or match["noun"].lower() in STOP_WORDS | {"year", "time"}:
                continue  # "the band that recorded X", "that is", "that year": no reference
            kind, form = "thing", "subject"
        name = _referent(kind, turn)
        if name is None:
            return None
        text = _form(name, form)
        standalone = question[: match.start()] + text + question[match.end() :]
        said = match.group().lower()
        return Condensed(question, standalone, (name,), f"refers back: {said}")
    return None


def _elliptical(question: str, turn: Turn) -> Condensed | None:
    """``What about X?``: the previous question asked again about X."""
    match = ELLIPSIS.match(question)
    if not match:
        return None
    new = (match["rest"] or match["only"] or "").strip()
    new_names, old_names = names_in(new), names_in(turn.question)
    if not new_names or not old_names or len(words(new)) > 2 * len(words(new_names[0])) + 2:
        return None  # "And where was she born?" is no ellipsis: a question of its own
    start = turn.question.find(old_names[0])
    standalone = turn.question[:start] + new + turn.question[start + len(old_names[0]) :]
    return Condensed(question, standalone, (), "elliptical")


def condense(question: str, history: Sequence[Turn]) -> Condensed:
    """``question`` made standalone with the last turn of ``history`` (module docstring);
    a first question, or one that names its own subject, is returned as it is (spaces
    collapsed). ``TypeError`` when ``question`` is not a string."""
    text = _clean(question)
    if not history or not text:
        return Condensed(text, text, (), "first question" if not history else "empty")
    turn = history[-1]
    for rule in (_elliptical, _refers_back):
        found = rule(text, turn)
        if found is not None:
            return found
    if names_in(text):
        return Condensed(text, text, (), "self-contained")
    carried = [s.name for s in reversed(turn.subjects)] or names_in(turn.question)
    carried = list(dict.fromkeys(carried))[:MAX_CARRIED]
    if not carried:
        return Condensed(text, text, (), "names nothing, nothing to carry")
    standalone = f"{text.rstrip('?').rstrip()} ({', '.join(carried)})?"
    return Condensed(text, standalone, tuple(carried), "names nothing")


def check_rewrite(question: str, rewrite: str) -> str | None:
    """Why a model's standalone ``rewrite`` of ``question`` cannot be used, or ``None``
    when it can: it must be one question (a question mark, or a question's first word), at
    most three times as long as the question plus 200 characters, keep every name of the
    question and at least two thirds of its content words.

    >>> check_rewrite("And where was she born?", "Where was Ilse Marrow born?") is None
    True
    >>> check_rewrite("Where was Ilse Marrow born?", "Where is Ellisford?")
    "drops the question's name 'Ilse Marrow'"
    """
    text = REWRITE_LABEL.sub("", " ".join((rewrite or "").split())).strip().strip('"')
    if not text:
        return "empty"
    if len(text) > 3 * len(question) + 200:
        return "too long"
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s]
    first = words(text)[0].lower() if words(text) else ""
    if len(sentences) > 1 or not (text.endswith("?") or first in QUESTION_OPENERS):
        return "not a question"
    lowered = text.lower()
    for name in names_in(question):
        if name.lower() not in lowered:
            return f"drops the question's name {name!r}"
    wanted = content_words(question)
    kept = set(content_words(text))
    if wanted and sum(w in kept for w in wanted) < math.ceil(2 * len(wanted) / 3):
        missing = [w for w in wanted if w not in kept]
        return f"drops the question's words {missing}"
    return None


def condense_checked(question: str, history: Sequence[Turn], rewrite: str | None) -> Condensed:
    """The model's ``rewrite`` when :func:`check_rewrite` accepts it, else :func:`condense`
    (its ``how`` saying why the rewrite was refused); no rewrite: :func:`condense`.

    >>> turn = Turn("Who directed The Salt Lantern?", (Subject("Ilse Marrow", person=True),))
    >>> condense_checked("Where was she born?", [turn], "Ilse Marrow was born in 1931.").how
    'model rewrite refused: not a question; refers back: she'
    """
    fallback = condense(question, history)
    if rewrite is None or not history:
        return fallback
    why = check_rewrite(fallback.question, rewrite)
    if why is None:
        text = REWRITE_LABEL.sub("", " ".join(rewrite.split())).strip().strip('"')
        return Condensed(fallback.question, text, (), "model rewrite")
    return Condensed(
        fallback.question,
        fallback.standalone,
        fallback.carried,
        f"model rewrite refused: {why}; {fallback.how}",
    )
