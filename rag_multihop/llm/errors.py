"""Typed errors of the LLM layer.

Every error subclasses :class:`LLMError`, so ``except LLMError`` catches all of them:

- :class:`LLMConfigError` (also a ``ValueError``): the call cannot work as configured — an
  unknown model string, a missing or rejected API key (the message names the environment
  variable), a model the provider does not serve.
- :class:`LLMCallError`: the provider failed and the retry budget is spent (rate limits, 5xx,
  timeouts, a streamed reply still coming at its timeout, connection errors) or the request
  was refused as invalid.
- :class:`LLMOutputError`: the reply could not be used (malformed JSON, a schema violation,
  an empty reply or a refusal), after the one repair attempt.

An error caused by a provider's exception chains a :class:`ProviderError` as ``__cause__``:
its type name, HTTP status and text with secrets redacted, never the exception itself (a
proxy may echo the ``Authorization`` header in its error text).

Example:
    >>> err = LLMOutputError("no JSON object in the reply", reason="malformed", raw="Sure!")
    >>> isinstance(err, LLMError), err.reason, err.raw
    (True, 'malformed', 'Sure!')
"""

from __future__ import annotations

from typing import Literal

from rag_multihop.llm.accounting import LLMAccount
from rag_multihop.llm.retry import status_code
from rag_multihop.secrets import redact_secrets

OutputProblem = Literal["malformed", "invalid", "empty", "refused"]
"""Why a reply was unusable: not JSON, JSON that fails the schema, no text, a refusal."""


class LLMError(Exception):
    """Base class of every error raised by :mod:`rag_multihop.llm`."""


class LLMConfigError(LLMError, ValueError):
    """The model, key or endpoint is misconfigured; retrying cannot help."""


class ProviderError(Exception):
    """A provider's exception with its secrets redacted: what an :class:`LLMError` chains as
    ``__cause__`` in place of that exception, whose text may echo the API key.

    ``type_name``: the provider exception's class (``litellm.exceptions.RateLimitError``);
    ``status_code``: its HTTP status, ``None`` without one. Its text is the exception's with
    :func:`~rag_multihop.secrets.redact_secrets` applied, and its traceback the exception's
    (file and line names, no values); the exception's own chain is left out. Never raised.

    >>> err = ProviderError(PermissionError("proxy: 'Authorization: Bearer sk-" + "a1B2" * 8 + "'"))
    >>> str(err), err.status_code
    ("PermissionError: proxy: 'Authorization: Bearer [redacted]'", None)
    """

    def __init__(self, exc: BaseException) -> None:
        kind = type(exc)
        self.type_name = (
            kind.__qualname__
            if kind.__module__ == "builtins"
            else f"{kind.__module__}.{kind.__qualname__}"
        )
        self.status_code = status_code(exc)
        super().__init__(f"{self.type_name}: {redact_secrets(str(exc))}")
        self.__traceback__ = exc.__traceback__


class LLMCallError(LLMError):
    """The provider call failed for good; ``attempts`` calls were made, the last failure
    chained as a :class:`ProviderError`."""

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
