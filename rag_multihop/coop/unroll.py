"""Question unrolling (CoopRAG §3.2): sub-questions and a reasoning chain with masked entities.

An LLM (:class:`LLMUnroller`, prompt :data:`~rag_multihop.llm.prompts.QUESTION_UNROLLING`)
turns a question into sub-questions and a chain of (head, relation, tail) triples in which
the entities it is unsure of are the mask :data:`~rag_multihop.llm.prompts.UNKNOWN` and the
last tail is the answer slot :data:`~rag_multihop.llm.prompts.ANSWER_SLOT`.
:func:`check_unrolling` turns the validated reply into an :class:`Unrolling`, repairing and
flagging what a model gets wrong (each one named in ``Unrolling.issues``):

- a sub-question that repeats the question is dropped;
- mask spellings (``[UNKNOWN]``, ``<UNCERTAIN>``, ``?``, ``<FILL>`` ...) become the two tokens;
- a last tail that is not the answer slot (the model answered) becomes the answer slot;
- a triple that repeats an earlier one is dropped;
- a chain whose every head and tail is masked is kept but flagged: it adds only relations;
- a chain that merely restates the question is flagged.

**The one fallback**: a reply that is still unusable after the client's repair attempt (not
JSON, no chain, no sub-question, a refusal) gives the raw question (no sub-questions, no
chain) with ``fallback=True`` and the reason in ``issues``; ``on_error="raise"`` raises the
client's :class:`~rag_multihop.llm.errors.LLMOutputError` instead.

:meth:`Unrolling.query_text` is the unrolled question that UAR retrieves with: the question,
the sub-questions and the chain, masks left out (an encoder has never seen them).

Example:
    >>> from rag_multihop.llm.prompts import ChainTriple, UnrolledQuestion
    >>> reply = UnrolledQuestion(
    ...     sub_questions=["Who directed Rope?", "Who directed Rope?"],
    ...     chain=[ChainTriple(head="Rope", relation="directed by", tail="[UNKNOWN]"),
    ...            ChainTriple(head="<unknown>", relation="born in", tail="London")])
    >>> unrolled = check_unrolling("Where was the director of Rope born?", reply)
    >>> unrolled.query_text()
    'Where was the director of Rope born? Who directed Rope? Rope directed by. born in.'
    >>> unrolled.issues
    ('the last tail was not the answer slot; replaced',)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from rag_multihop.text import visible
from rag_multihop.validation import loggable

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.client import LLMClient
    from rag_multihop.llm.errors import LLMOutputError
    from rag_multihop.llm.prompts import PromptTemplate, UnrolledQuestion

logger = logging.getLogger(__name__)

UNKNOWN = "<unknown>"
ANSWER_SLOT = "<answer>"
# Kept equal to rag_multihop.llm.prompts.UNKNOWN / ANSWER_SLOT (checked in the tests) so
# that this module imports without pydantic.

_MASK_WORDS = re.compile(r"^\W*(unknown|uncertain|unsure|mask|masked|unk|\?+)\W*$", re.I)
_SLOT_WORDS = re.compile(r"^\W*(answer|fill|answer[ _]slot|placeholder)\W*$", re.I)
_WORDS = re.compile(r"\w+")


def normalize_slot(value: str) -> str:
    """A chain field with its mask or answer-slot spelling normalised.

    >>> normalize_slot("[UNCERTAIN]"), normalize_slot("<FILL>"), normalize_slot("Paris")
    ('<unknown>', '<answer>', 'Paris')
    """
    text = value.strip()
    if _MASK_WORDS.match(text):
        return UNKNOWN
    if _SLOT_WORDS.match(text):
        return ANSWER_SLOT
    return text


def is_slot(value: str) -> bool:
    """The field is a mask or the answer slot."""
    return value in (UNKNOWN, ANSWER_SLOT)


@dataclass(frozen=True)
class Triple:
    """One step of a reasoning chain."""

    head: str
    relation: str
    tail: str

    def text(self, *, masks: bool = False) -> str:
        """``head relation tail.``, masked fields left out unless ``masks``.

        >>> Triple("Rope", "directed by", UNKNOWN).text()
        'Rope directed by.'
        """
        parts = [p for p in (self.head, self.relation, self.tail) if masks or not is_slot(p)]
        return " ".join(parts) + "." if parts else ""


@dataclass(frozen=True)
class Unrolling:
    """An unrolled question: sub-questions, a reasoning chain, and what had to be fixed.

    ``fallback`` is true when the LLM reply was unusable and this is the raw question;
    ``issues`` names every repair and flag (empty when the reply was used as it came).
    """

    question: str
    sub_questions: tuple[str, ...] = ()
    chain: tuple[Triple, ...] = ()
    fallback: bool = False
    issues: tuple[str, ...] = ()

    def query_text(self, *, masks: bool = False) -> str:
        """The question, the sub-questions and the chain as one retrieval query."""
        parts = [self.question, *self.sub_questions, *(t.text(masks=masks) for t in self.chain)]
        return " ".join(p for p in parts if p)

    @property
    def masked(self) -> int:
        """Heads and tails that are masks (the answer slot not counted)."""
        return sum(f == UNKNOWN for t in self.chain for f in (t.head, t.tail))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` is its inverse.

        >>> u = Unrolling("Who?", ("Who is it?",), (Triple("a", "b", ANSWER_SLOT),))
        >>> Unrolling.from_dict(u.to_dict()) == u
        True
        """
        return {
            "question": self.question,
            "sub_questions": list(self.sub_questions),
            "chain": [[t.head, t.relation, t.tail] for t in self.chain],
            "fallback": self.fallback,
            "issues": list(self.issues),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Unrolling:
        """An unrolling from :meth:`to_dict`'s output; a malformed one raises ``ValueError``."""
        try:
            question = str(data["question"])
            chain = tuple(Triple(str(h), str(r), str(t)) for h, r, t in data.get("chain", ()))
            return cls(
                question,
                tuple(str(q) for q in data.get("sub_questions", ())),
                chain,
                bool(data.get("fallback", False)),
                tuple(str(i) for i in data.get("issues", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an unrolling: {exc!r}") from None


def raw_question(question: str, reason: str | None = None) -> Unrolling:
    """The fallback (and LLM-free) unrolling: the question alone."""
    return Unrolling(
        question, fallback=reason is not None, issues=() if reason is None else (reason,)
    )


def _key(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORDS.findall(visible(text)))


def check_unrolling(question: str, reply: UnrolledQuestion) -> Unrolling:
    """An :class:`Unrolling` from a schema-valid reply, repaired and flagged (module docs)."""
    issues: list[str] = []
    question_key = _key(question)
    sub_questions: list[str] = []
    for sub in reply.sub_questions:
        if _key(sub) == question_key:
            issues.append("a sub-question repeated the question; dropped")
        elif _key(sub) not in {_key(s) for s in sub_questions}:
            sub_questions.append(sub)
    chain: list[Triple] = []
    for t in reply.chain:
        triple = Triple(normalize_slot(t.head), t.relation.strip(), normalize_slot(t.tail))
        if triple in chain:
            if "a repeated triple was dropped" not in issues:
                issues.append("a repeated triple was dropped")
        else:
            chain.append(triple)
    last = chain[-1]
    if last.tail != ANSWER_SLOT:
        issues.append("the last tail was not the answer slot; replaced")
        chain[-1] = Triple(last.head, last.relation, ANSWER_SLOT)
    for i, triple in enumerate(chain[:-1]):
        if triple.tail == ANSWER_SLOT:
            issues.append(f"triple {i + 1} had the answer slot before the end; masked")
            chain[i] = Triple(triple.head, triple.relation, UNKNOWN)
    entities = [f for t in chain for f in (t.head, t.tail) if f != ANSWER_SLOT]
    if entities and all(f == UNKNOWN for f in entities):
        issues.append("every entity of the chain is masked: it adds only its relations")
    chain_words = {w for t in chain for w in _key(t.text())}
    if chain_words and chain_words <= set(question_key):
        issues.append("the chain only restates the question")
    return Unrolling(question, tuple(sub_questions), tuple(chain), issues=tuple(issues))


@runtime_checkable
class Unroller(Protocol):
    """Anything that unrolls a question, synchronously and asynchronously:
    ``unroll(question) -> (Unrolling, account or None)`` and its awaitable twin ``aunroll``
    (:class:`LLMUnroller` is one; an unroller without I/O may run ``unroll`` in ``aunroll``)."""

    def unroll(self, question: str) -> tuple[Unrolling, LLMAccount | None]: ...

    async def aunroll(self, question: str) -> tuple[Unrolling, LLMAccount | None]: ...


@dataclass
class LLMUnroller:
    """Unrolls questions with an LLM through :class:`~rag_multihop.llm.client.LLMClient`.

    ``unroll``/``aunroll`` return ``(Unrolling, LLMAccount)``; see the module docstring for
    the repairs and the one fallback (``on_error="fallback"``, the default, or ``"raise"``).
    ``max_tokens`` caps the reply (a sensible unrolling needs far fewer).
    """

    client: LLMClient
    template: PromptTemplate | None = None
    max_tokens: int = 300
    on_error: Literal["fallback", "raise"] = "fallback"
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.on_error not in ("fallback", "raise"):
            raise ValueError(f"on_error must be 'fallback' or 'raise', got {self.on_error!r}")

    def _messages(self, question: str) -> list[dict[str, str]]:
        from rag_multihop.llm.prompts import QUESTION_UNROLLING, format_question_unrolling

        return format_question_unrolling(question, template=self.template or QUESTION_UNROLLING)

    def _fallback(self, question: str, error: LLMOutputError) -> tuple[Unrolling, LLMAccount]:
        self.failures += 1
        if self.on_error == "raise":
            raise error
        logger.warning(
            "question unrolling failed (%s) for %s; using the raw question",
            error.reason,
            loggable(question),
        )
        return raw_question(question, f"unusable unrolling reply ({error.reason})"), (
            error.account or _no_account()
        )

    def unroll(self, question: str) -> tuple[Unrolling, LLMAccount]:
        """Unroll ``question`` (sync)."""
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import UnrolledQuestion

        question = _check_question(question)
        try:
            reply = self.client.complete_json(
                self._messages(question), UnrolledQuestion, max_tokens=self.max_tokens
            )
        except LLMOutputError as exc:
            return self._fallback(question, exc)
        return check_unrolling(question, reply.value), reply.account

    async def aunroll(self, question: str) -> tuple[Unrolling, LLMAccount]:
        """Unroll ``question`` (async)."""
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import UnrolledQuestion

        question = _check_question(question)
        try:
            reply = await self.client.acomplete_json(
                self._messages(question), UnrolledQuestion, max_tokens=self.max_tokens
            )
        except LLMOutputError as exc:
            return self._fallback(question, exc)
        return check_unrolling(question, reply.value), reply.account


def _no_account() -> LLMAccount:
    from rag_multihop.llm.accounting import LLMAccount

    return LLMAccount()


def _check_question(question: object) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string, got {question!r}")
    return question.strip()
