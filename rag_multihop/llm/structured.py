"""Parsing LLM replies into validated pydantic objects.

:func:`extract_json_object` finds the JSON object in a reply: the whole text, else the
inside of a Markdown code fence, else the first ``{`` from which a JSON object decodes (so
prose around the object is tolerated). :func:`parse_reply` validates it against a pydantic
model. Both raise :class:`~rag_multihop.llm.errors.LLMOutputError` with a ``reason``:
``"empty"``, ``"malformed"`` (no JSON object), ``"invalid"`` (fails the schema) or
``"refused"`` (a provider refusal or a content filter). Nothing is evaluated: JSON only.

The fallback policy built on these (one repair attempt, then an error or the caller's
neutral value) lives in :meth:`rag_multihop.llm.client.LLMClient.complete_json`.

Example:
    >>> from pydantic import BaseModel
    >>> class Score(BaseModel):
    ...     score: int
    >>> parse_reply('Sure! ```json\\n{"score": 7}\\n```', Score)
    Score(score=7)
    >>> try:
    ...     parse_reply('{"score": "high"}', Score)
    ... except LLMOutputError as exc:
    ...     print(exc.reason, "|", exc)  # doctest: +ELLIPSIS
    invalid | reply does not match Score: score: Input should be a valid integer, ...
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rag_multihop.llm.errors import LLMOutputError

M = TypeVar("M", bound=BaseModel)

REFUSAL_FINISH_REASONS = frozenset({"content_filter", "refusal"})
"""Finish reasons that mean the provider declined to answer."""

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 64  # how many "{" positions to try before giving up on a long reply
_MAX_SHOWN = 200  # characters of a bad reply quoted in an error message


def extract_json_object(text: str | None) -> dict[str, Any]:
    """The first JSON object in ``text``.

    >>> extract_json_object('The answer is {"e1": "Paris", "e2": "{x}"} as requested.')
    {'e1': 'Paris', 'e2': '{x}'}
    """
    if text is None or not text.strip():
        raise LLMOutputError("the reply is empty", reason="empty", raw=text)
    decoder = json.JSONDecoder()
    for candidate in (text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))):
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):  # a reply nested too deep is no object
            value = None
        if isinstance(value, dict):
            return value
        start, tries = candidate.find("{"), 0
        while start >= 0 and tries < _MAX_STARTS:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except (json.JSONDecodeError, RecursionError):
                value = None
            if isinstance(value, dict):
                return value
            start, tries = candidate.find("{", start + 1), tries + 1
    shown = text.strip()[:_MAX_SHOWN]
    raise LLMOutputError(f"no JSON object in the reply: {shown!r}", reason="malformed", raw=text)


def parse_reply(
    text: str | None,
    schema: type[M],
    *,
    refusal: str | None = None,
    finish_reason: str | None = None,
) -> M:
    """``text`` parsed and validated as ``schema``; a refusal is reported as such.

    ``refusal`` and ``finish_reason`` come from the provider's reply: a refusal message or a
    finish reason in :data:`REFUSAL_FINISH_REASONS` raises ``reason="refused"`` even when
    the text happens to contain JSON.
    """
    if refusal or finish_reason in REFUSAL_FINISH_REASONS:
        detail = refusal or f"finish_reason={finish_reason!r}"
        raise LLMOutputError(f"the model refused: {detail}", reason="refused", raw=text)
    data = extract_json_object(text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise LLMOutputError(
            f"reply does not match {schema.__name__}: {problems}", reason="invalid", raw=text
        ) from exc
