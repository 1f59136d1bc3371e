"""The retry policy of :class:`~rag_multihop.llm.client.LLMClient` as pure functions.

:func:`classify` sorts an exception from a provider call into what the client does with it;
:func:`backoff` computes the wait before retry ``attempt`` (exponential, jittered, capped,
never shorter than a ``Retry-After`` header asks).

Example:
    >>> class RateLimited(Exception):
    ...     status_code = 429
    ...     headers = {"retry-after": "3"}
    >>> classify(RateLimited())
    Failure(kind='retry', status=429, retry_after=3.0)
    >>> backoff(2, 3.0, base=0.5, cap=30.0, jitter=1.0)
    3.0
    >>> backoff(2, None, base=0.5, cap=30.0, jitter=0.0)
    1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides every 5xx (timeout, conflict, rate limit)."""

FailureKind = Literal["retry", "bad_key", "no_model", "rejected", "not_a_provider_error"]


@dataclass(frozen=True)
class Failure:
    """What an exception from a call means.

    ``kind``: ``"retry"`` (rate limit, 5xx, timeout, connection: try again), ``"bad_key"``
    (HTTP 401/403), ``"no_model"`` (HTTP 404), ``"rejected"`` (another HTTP error: the request
    itself is wrong) or ``"not_a_provider_error"`` (a bug or a cancellation: let it through).
    """

    kind: FailureKind
    status: int | None = None
    retry_after: float | None = None


def status_code(exc: BaseException) -> int | None:
    """The HTTP status a provider error carries, if any."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header on a provider error, when it has one."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
            seconds = float(value) if value is not None else None
        except (AttributeError, TypeError, ValueError):
            continue
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def classify(exc: BaseException) -> Failure:
    """What the client does with ``exc`` (see :class:`Failure`)."""
    status = status_code(exc)
    if status in (401, 403):
        return Failure("bad_key", status)
    if status == 404:
        return Failure("no_model", status)
    if isinstance(exc, TimeoutError | ConnectionError) or (
        status is not None and (status in RETRYABLE_STATUS or status >= 500)
    ):
        return Failure("retry", status, retry_after(exc))
    if status is None:
        return Failure("not_a_provider_error")
    return Failure("rejected", status)


def backoff(
    attempt: int, retry_after: float | None, *, base: float, cap: float, jitter: float
) -> float:
    """Seconds to wait before retry ``attempt`` (0 = the first retry): ``base · 2^attempt``
    capped at ``cap``, scaled by ``0.5 + 0.5 · jitter`` (``jitter`` in [0, 1)), at least
    ``retry_after``, at most ``cap``."""
    delay = min(cap, base * 2**attempt) * (0.5 + 0.5 * jitter)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, cap)
