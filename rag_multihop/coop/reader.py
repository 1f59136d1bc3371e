"""Reasoning-chain completion and answering (CoopRAG §3.5), with span checks.

:class:`ChainReader` makes the paper's two separate calls through the LLM client:

1. **completion** (:data:`~rag_multihop.llm.prompts.CHAIN_COMPLETION`): the unrolled chain's
   masks and answer slot filled from the top-k passages;
2. **answer** (:data:`~rag_multihop.llm.prompts.CONCISE_ANSWER`, or
   :data:`~rag_multihop.llm.prompts.BINARY_ANSWER` for yes/no questions, whose schema only
   admits ``"yes"``/``"no"``): a short answer from the question, the sub-questions, the
   completed chain and the passages.

Model output is checked, never trusted: :func:`check_completion` keeps the unrolled chain's
shape (a reply of another length or one that rewrites known entities is realigned to the
unrolled chain, flagged) and :func:`unsupported_spans` flags every filled entity, and the
answer, that the passages do not contain (after SQuAD normalisation: case, articles,
punctuation). Flagged spans are reported in :class:`Reading` — they are not removed, since a
model may rightly paraphrase — so a caller can see, count and filter invented spans.

Fallbacks: an unusable completion keeps the unrolled chain (flagged); an unusable answer
reply gives ``""`` (flagged, an EM/F1 of 0), unless ``on_error="raise"``.

Example (pure helpers):
    >>> from rag_multihop.coop.unroll import Triple
    >>> is_binary_question("Were Scott Derrickson and Ed Wood of the same nationality?")
    True
    >>> chain = (Triple("Rope", "directed by", "Alfred Hitchcock"),)
    >>> unsupported_spans(chain, (Triple("Rope", "directed by", "<answer>"),), ["Rope (1948)"])
    ('Alfred Hitchcock',)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rag_multihop.coop.unroll import ANSWER_SLOT, UNKNOWN, Triple, Unrolling, normalize_slot
from rag_multihop.text import normalize_answer
from rag_multihop.types import Passage

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.client import LLMClient
    from rag_multihop.llm.errors import LLMOutputError

logger = logging.getLogger(__name__)

_BINARY_START = re.compile(
    r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might)\b",
    re.IGNORECASE,
)


def is_binary_question(question: str) -> bool:
    """A yes/no question: it opens with an auxiliary verb (HotpotQA's comparison questions
    "Are X and Y both ...?", "Was X released before Y?")."""
    return bool(_BINARY_START.match(question.strip()))


def in_passages(span: str, passages: Sequence[Passage | str]) -> bool:
    """``span`` occurs in one of the passages (title included), after normalisation."""
    key = normalize_answer(span)
    if not key:
        return True
    return any(
        f" {key} " in f" {normalize_answer(p.embedding_text if isinstance(p, Passage) else p)} "
        for p in passages
    )


def unsupported_spans(
    completed: Sequence[Triple], unrolled: Sequence[Triple], passages: Sequence[Passage | str]
) -> tuple[str, ...]:
    """Entities the completion filled in (where the unrolled chain had a mask or the answer
    slot) that no passage contains."""
    found = []
    for new, old in zip(completed, unrolled, strict=False):
        for filled, before in ((new.head, old.head), (new.tail, old.tail)):
            if (
                before in (UNKNOWN, ANSWER_SLOT)
                and filled not in (UNKNOWN, ANSWER_SLOT)
                and not in_passages(filled, passages)
            ):
                found.append(filled)
    return tuple(dict.fromkeys(found))


def check_completion(
    unrolled: Sequence[Triple], reply_chain: Sequence[Any]
) -> tuple[tuple[Triple, ...], tuple[str, ...]]:
    """The completed chain aligned to the unrolled one, and the issues found.

    Only masked positions may change: a field the unrolled chain already knew is kept, a
    reply with fewer triples leaves the rest unfilled, extra triples are dropped.
    """
    issues = []
    if len(reply_chain) != len(unrolled):
        issues.append(
            f"the completed chain has {len(reply_chain)} triples for {len(unrolled)}; realigned"
        )
    completed = []
    changed_known = False
    for i, old in enumerate(unrolled):
        if i >= len(reply_chain):
            completed.append(old)
            continue
        new = reply_chain[i]
        fields = []
        for before, after in ((old.head, new.head), (old.tail, new.tail)):
            after = normalize_slot(after)
            if before in (UNKNOWN, ANSWER_SLOT):
                fields.append(after)
            else:
                changed_known |= normalize_answer(after) != normalize_answer(before)
                fields.append(before)
        completed.append(Triple(fields[0], old.relation, fields[1]))
    if changed_known:
        issues.append("the completion rewrote entities the unrolled chain knew; kept the originals")
    return tuple(completed), tuple(issues)


@dataclass(frozen=True)
class Reading:
    """What the reader produced for one question.

    ``answer`` is ``""`` when the answer reply was unusable; ``unsupported`` lists filled
    entities (and the answer, unless yes/no) that no passage contains; ``issues`` every repair,
    flag and fallback; ``account`` the LLM spend of both calls.
    """

    chain: tuple[Triple, ...]
    answer: str
    binary: bool
    unsupported: tuple[str, ...]
    issues: tuple[str, ...]
    account: LLMAccount
    calls: dict[str, LLMAccount] = field(default_factory=dict)

    @property
    def answer_supported(self) -> bool:
        return self.answer not in self.unsupported


@dataclass
class ChainReader:
    """Completes the reasoning chain and answers, with an LLM (see the module docstring).

    ``top_k`` passages (default 5) are shown to the model, each cut to ``max_chars``;
    ``completion_tokens`` and ``answer_tokens`` cap the replies (a sensible reply fits well
    within them; they stop a small model that runs on).
    """

    client: LLMClient
    top_k: int = 5
    max_chars: int | None = 1000
    completion_tokens: int = 300
    answer_tokens: int = 48
    on_error: Literal["fallback", "raise"] = "fallback"
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        for name in ("top_k", "completion_tokens", "answer_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.on_error not in ("fallback", "raise"):
            raise ValueError(f"on_error must be 'fallback' or 'raise', got {self.on_error!r}")

    def _give_up(self, stage: str, error: LLMOutputError) -> LLMAccount:
        from rag_multihop.llm.accounting import LLMAccount

        self.failures += 1
        if self.on_error == "raise":
            raise error
        logger.warning("chain %s reply unusable (%s); using the fallback", stage, error.reason)
        return error.account or LLMAccount()

    def _completion_messages(self, unrolling: Unrolling, passages: Sequence[Passage]) -> Any:
        from rag_multihop.llm.prompts import ChainTriple, format_chain_completion

        chain = [
            ChainTriple(head=t.head, relation=t.relation, tail=t.tail) for t in unrolling.chain
        ]
        return format_chain_completion(
            unrolling.question, unrolling.sub_questions, chain, passages, max_chars=self.max_chars
        )

    def _answer_messages(
        self, unrolling: Unrolling, chain: Sequence[Triple], passages: Sequence[Passage]
    ) -> tuple[Any, Any]:
        from rag_multihop.llm.prompts import (
            BinaryAnswer,
            ChainTriple,
            ConciseAnswer,
            format_answer,
        )

        binary = is_binary_question(unrolling.question)
        messages = format_answer(
            unrolling.question,
            unrolling.sub_questions,
            [ChainTriple(head=t.head, relation=t.relation, tail=t.tail) for t in chain],
            passages,
            binary=binary,
            max_chars=self.max_chars,
        )
        return messages, BinaryAnswer if binary else ConciseAnswer

    def _passages(self, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            raise ValueError("the reader needs at least one passage")
        return list(passages[: self.top_k])

    def read(self, unrolling: Unrolling, passages: Sequence[Passage]) -> Reading:
        """Complete the chain (when there is one) and answer (sync)."""
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import CompletedChain

        shown = self._passages(passages)
        calls: dict[str, LLMAccount] = {}
        chain, issues = unrolling.chain, list[str]()
        if unrolling.chain:
            try:
                reply = self.client.complete_json(
                    self._completion_messages(unrolling, shown),
                    CompletedChain,
                    max_tokens=self.completion_tokens,
                )
                chain, found = check_completion(unrolling.chain, reply.value.chain)
                issues += found
                calls["complete"] = reply.account
            except LLMOutputError as exc:
                calls["complete"] = self._give_up("completion", exc)
                issues.append(f"unusable completion reply ({exc.reason}); chain left unfilled")
        messages, schema = self._answer_messages(unrolling, chain, shown)
        try:
            answer_reply = self.client.complete_json(
                messages, schema, max_tokens=self.answer_tokens
            )
            answer, calls["answer"] = answer_reply.value.answer, answer_reply.account
        except LLMOutputError as exc:
            calls["answer"] = self._give_up("answer", exc)
            answer = ""
            issues.append(f"unusable answer reply ({exc.reason}); empty answer")
        return _reading(unrolling, chain, answer, shown, issues, calls)

    async def aread(self, unrolling: Unrolling, passages: Sequence[Passage]) -> Reading:
        """The async twin of :meth:`read` (the two calls stay in order: the answer needs the
        completed chain)."""
        from rag_multihop.llm.errors import LLMOutputError
        from rag_multihop.llm.prompts import CompletedChain

        shown = self._passages(passages)
        calls: dict[str, LLMAccount] = {}
        chain, issues = unrolling.chain, list[str]()
        if unrolling.chain:
            try:
                reply = await self.client.acomplete_json(
                    self._completion_messages(unrolling, shown),
                    CompletedChain,
                    max_tokens=self.completion_tokens,
                )
                chain, found = check_completion(unrolling.chain, reply.value.chain)
                issues += found
                calls["complete"] = reply.account
            except LLMOutputError as exc:
                calls["complete"] = self._give_up("completion", exc)
                issues.append(f"unusable completion reply ({exc.reason}); chain left unfilled")
        messages, schema = self._answer_messages(unrolling, chain, shown)
        try:
            answer_reply = await self.client.acomplete_json(
                messages, schema, max_tokens=self.answer_tokens
            )
            answer, calls["answer"] = answer_reply.value.answer, answer_reply.account
        except LLMOutputError as exc:
            calls["answer"] = self._give_up("answer", exc)
            answer = ""
            issues.append(f"unusable answer reply ({exc.reason}); empty answer")
        return _reading(unrolling, chain, answer, shown, issues, calls)


def _reading(
    unrolling: Unrolling,
    chain: tuple[Triple, ...],
    answer: str,
    passages: Sequence[Passage],
    issues: list[str],
    calls: dict[str, LLMAccount],
) -> Reading:
    from rag_multihop.llm.accounting import LLMAccount

    binary = is_binary_question(unrolling.question)
    unsupported = list(unsupported_spans(chain, unrolling.chain, passages))
    if answer and not binary and not in_passages(answer, passages) and answer not in unsupported:
        unsupported.append(answer)
    if unsupported:
        issues.append(f"{len(unsupported)} span(s) not found in the passages")
    return Reading(
        chain=chain,
        answer=answer,
        binary=binary,
        unsupported=tuple(unsupported),
        issues=tuple(issues),
        account=sum(calls.values(), LLMAccount()),
        calls=calls,
    )
