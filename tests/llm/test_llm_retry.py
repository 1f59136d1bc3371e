"""The retry policy as pure functions: what each failure means, how long to wait."""

from __future__ import annotations

import pytest

from rag_multihop.llm.retry import Failure, backoff, classify


class ProviderError(Exception):
    def __init__(self, status: int | None, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.headers = headers or {}


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ProviderError(401), Failure("bad_key", 401)),
        (ProviderError(403), Failure("bad_key", 403)),
        (ProviderError(404), Failure("no_model", 404)),
        (ProviderError(400), Failure("rejected", 400)),
        (ProviderError(429, {"Retry-After": "7"}), Failure("retry", 429, 7.0)),
        (ProviderError(503, {"retry-after": "soon"}), Failure("retry", 503, None)),
        (ProviderError(500, {"retry-after": "-1"}), Failure("retry", 500, None)),
        (TimeoutError("slow"), Failure("retry")),
        (ConnectionError("down"), Failure("retry")),
        (KeyError("a bug"), Failure("not_a_provider_error")),
    ],
)
def test_classify_sorts_every_failure(exc: BaseException, expected: Failure) -> None:
    assert classify(exc) == expected


def test_a_boolean_status_is_no_status() -> None:
    error = ProviderError(None)
    error.status_code = True  # type: ignore[assignment]
    assert classify(error) == Failure("not_a_provider_error")


def test_backoff_doubles_jitters_honours_retry_after_and_caps() -> None:
    waits = [backoff(a, None, base=1.0, cap=30.0, jitter=1.0) for a in range(6)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert backoff(0, None, base=1.0, cap=30.0, jitter=0.0) == 0.5
    assert backoff(0, 12.0, base=1.0, cap=30.0, jitter=0.5) == 12.0
    assert backoff(0, 120.0, base=1.0, cap=30.0, jitter=0.5) == 30.0
