"""What LLM calls cost: calls, tokens, money and time, summable across calls and queries.

Every reply carries the :class:`LLMAccount` of the call that produced it; a method sums the
accounts of one query's calls and returns the total with its results, and the benchmark sums
the queries' accounts. ``sum()`` works directly because ``0 + account`` is ``account``.

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
        prompt_tokens: input tokens reported by the provider.
        completion_tokens: output tokens reported by the provider.
        cost: US dollars, or ``None`` when some call's price is unknown.
        wall_time_s: seconds spent in calls, retries and backoff included. Concurrent calls
            add up, so for a query's latency measure its elapsed time separately.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    wall_time_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

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
        )

    def __radd__(self, other: object) -> LLMAccount:
        if other == 0:  # the start value of sum()
            return self
        return NotImplemented

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, ``total_tokens`` included (for benchmark reports)."""
        return {**asdict(self), "total_tokens": self.total_tokens}
