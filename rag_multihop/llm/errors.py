"""Typed errors of the LLM layer.

Every error subclasses :class:`LLMError`, so ``except LLMError`` catches all of them:

- :class:`LLMConfigError` (also a ``ValueError``): the call cannot work as configured — an
  unknown model string, a missing or rejected API key (the message names the environment
  variable), a model the provider does not serve.
- :class:`LLMCallError`: the provider failed and the retry budget is spent (rate limits, 5xx,
  timeouts, connection errors) or the request was refused as invalid; the provider's
  exception is chained as ``__cause__``.
- :class:`LLMOutputError`: the reply could not be used (malformed JSON, a schema violation,
  an empty reply or a refusal), after the one repair attempt.

Example:
    >>> err = LLMOutputError("no JSON object in the reply", reason="malformed", raw="Sure!")
    >>> isinstance(err, LLMError), err.reason, err.raw
    (True, 'malformed', 'Sure!')
"""

from __future__ import annotations

from typing import Literal

from rag_multihop.llm.accounting import LLMAccount

OutputProblem = Literal["malformed", "invalid", "empty", "refused"]
"""Why a reply was unusable: not JSON, JSON that fails the schema, no text, a refusal."""


class LLMError(Exception):
    """Base class of every error raised by :mod:`rag_multihop.llm`."""


class LLMConfigError(LLMError, ValueError):
    """The model, key or endpoint is misconfigured; retrying cannot help."""


class LLMCallError(LLMError):
    """The provider call failed for good; ``attempts`` calls were made, the last cause chained."""

    def __init__(self, message: str, *, model: str, attempts: int) -> None:
        super().__init__(message)
        self.model = model
        self.attempts = attempts


class LLMOutputError(LLMError):
    """A reply that could not be parsed or validated, or was refused.

    ``raw`` is the offending reply text (``None`` when the reply had no text) and ``account``
    what the failed attempts cost, so a caller that gives up still reports the spend.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: OutputProblem,
        raw: str | None = None,
        account: LLMAccount | None = None,
    ) -> None:
        super().__init__(message)
        self.reason: OutputProblem = reason
        self.raw = raw
        self.account = account if account is not None else LLMAccount()
