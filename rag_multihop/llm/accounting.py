"""What LLM calls cost: calls, tokens, money and time, summable across calls and queries.

Every reply carries the :class:`LLMAccount` of the call that produced it; a method sums the
accounts of one query's calls and returns the total with its results, and the benchmark sums
the queries' accounts. ``sum()`` works directly because ``0 + account`` is ``account``.

Token counts are the provider's when it reports them. When it does not (a stream without a
usage block, a reply without one), the counts are estimates: litellm's tokenizer estimate, a
count of streamed pieces, or 0 when nothing could be counted; such calls are counted in
``estimated_calls`` and their tokens in ``estimated_tokens``, so a total says how much of it
is estimated (``estimated`` is true when any part is), and a cost computed from them is an
estimate too.

``cost`` is in US dollars as litellm prices the model (or as the settings'
``input_cost_per_token`` / ``output_cost_per_token`` price it). It is ``None`` when any
summed call had no known price: an unknown part makes the total unknown, never silently
smaller. Cache hits cost nothing and count as ``cache_hits``, not ``calls``.

Example:
    >>> a = LLMAccount(calls=1, prompt_tokens=21, completion_tokens=9, cost=8.55e-06)
    >>> b = LLMAccount(cache_hits=1)
    >>> total = sum([a, b, a])
    >>> total.calls, total.cache_hits, total.total_tokens, round(total.cost, 8)
    (2, 1, 60, 1.71e-05)
    >>> (a + LLMAccount(calls=1, cost=None)).cost is None
    True
    >>> guess = LLMAccount(calls=1, prompt_tokens=14, completion_tokens=5, estimated_calls=1,
    ...                    estimated_tokens=19)
    >>> total = a + guess
    >>> total.estimated, total.estimated_calls, total.estimated_tokens, total.total_tokens
    (True, 1, 19, 49)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LLMAccount:
    """Usage of one or more LLM calls.

    Attributes:
        calls: requests the provider answered (cache hits excluded, failed attempts excluded).
        cache_hits: replies served from the on-disk cache.
        retries: attempts that failed with a retryable error and were retried.
        prompt_tokens: input tokens, as the provider reported them or estimated (below).
        completion_tokens: output tokens, as the provider reported them or estimated.
        cost: US dollars, or ``None`` when some call's price is unknown.
        wall_time_s: seconds spent in calls, retries and backoff included. Concurrent calls
            add up, so for a query's latency measure its elapsed time separately.
        estimated_calls: of ``calls``, those whose token counts the provider did not report
            (the counts are litellm's estimate, a count of streamed pieces, or 0).
        estimated_tokens: of :attr:`total_tokens`, those counted by such calls.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    wall_time_s: float = 0.0
    estimated_calls: int = 0
    estimated_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def estimated(self) -> bool:
        """Whether any of the token counts (and so the cost) is an estimate."""
        return self.estimated_calls > 0

    def __add__(self, other: LLMAccount) -> LLMAccount:
        if not isinstance(other, LLMAccount):
            return NotImplemented
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return LLMAccount(
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            retries=self.retries + other.retries,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
            wall_time_s=self.wall_time_s + other.wall_time_s,
            estimated_calls=self.estimated_calls + other.estimated_calls,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
        )

    def __radd__(self, other: object) -> LLMAccount:
        if other == 0:  # the start value of sum()
            return self
        return NotImplemented

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, ``total_tokens`` and ``estimated`` included (for benchmark
        reports)."""
        return {**asdict(self), "total_tokens": self.total_tokens, "estimated": self.estimated}
