"""LLMAccount: sums, unknown costs, reports."""

from __future__ import annotations

import pytest

from rag_multihop.llm import LLMAccount


def test_accounts_sum_field_by_field() -> None:
    a = LLMAccount(
        calls=1, retries=1, prompt_tokens=10, completion_tokens=2, cost=0.5, wall_time_s=1.0
    )
    b = LLMAccount(calls=2, cache_hits=3, prompt_tokens=5, completion_tokens=1, cost=0.25)
    total = a + b
    assert total == LLMAccount(
        calls=3,
        cache_hits=3,
        retries=1,
        prompt_tokens=15,
        completion_tokens=3,
        cost=0.75,
        wall_time_s=1.0,
    )
    assert total.total_tokens == 18


def test_builtin_sum_and_empty_sum() -> None:
    parts = [LLMAccount(calls=1, cost=0.25)] * 3
    assert sum(parts) == LLMAccount(calls=3, cost=0.75)
    assert sum([], LLMAccount()) == LLMAccount()
    assert LLMAccount().cost == 0.0  # nothing spent is a known zero


def test_an_unknown_price_makes_the_total_unknown() -> None:
    known, unknown = LLMAccount(calls=1, cost=0.1), LLMAccount(calls=1, cost=None)
    assert (known + unknown).cost is None
    assert (unknown + known).cost is None
    assert sum([known, unknown, known], LLMAccount()).cost is None


def test_adding_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        LLMAccount() + 1  # type: ignore[operator]


def test_to_dict_is_json_ready() -> None:
    report = LLMAccount(calls=2, prompt_tokens=7, completion_tokens=3, cost=None).to_dict()
    assert report == {
        "calls": 2,
        "cache_hits": 0,
        "retries": 0,
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "cost": None,
        "wall_time_s": 0.0,
        "estimated_calls": 0,
        "estimated_tokens": 0,
        "total_tokens": 10,
        "estimated": False,
    }
