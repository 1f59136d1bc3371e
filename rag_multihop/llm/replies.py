"""What a call returns: :class:`LLMReply` (text) and :class:`JSONReply` (a validated object),
each with the :class:`~rag_multihop.llm.accounting.LLMAccount` of the call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel

from rag_multihop.llm.accounting import LLMAccount
from rag_multihop.llm.errors import LLMOutputError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LLMReply:
    """A text reply with its account. ``text`` is ``None`` when the provider sent none."""

    text: str | None
    model: str
    account: LLMAccount
    finish_reason: str | None = None
    refusal: str | None = None
    cached: bool = False


@dataclass(frozen=True)
class JSONReply(Generic[M]):
    """A validated reply.

    Attributes:
        value: the parsed object, or the caller's ``default`` when ``fallback`` is true.
        account: every attempt's usage (the repair attempt included).
        raw: the reply text ``value`` was parsed from (the last unusable one on fallback).
        repaired: ``value`` came from the repair attempt.
        fallback: ``value`` is the caller's default; ``error`` says why.
    """

    value: M
    account: LLMAccount
    raw: str | None
    repaired: bool = False
    fallback: bool = False
    error: LLMOutputError | None = field(default=None, compare=False)
