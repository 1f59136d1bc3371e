"""The local model's call defaults: reply cap, retries, concurrency = server slots, a timeout
sized to the output, and llama.cpp's repeat_penalty on free-text requests."""

from __future__ import annotations

from typing import Any

import pytest

from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.llm import local_transport as lt
from rag_multihop.llm.local import (
    LOCAL_MAX_TOKENS,
    REPEAT_PENALTY,
    ServerOptions,
    local_defaults,
)
from rag_multihop.llm.transport import RawReply


def test_local_settings_are_capped_and_sized_to_the_server() -> None:
    s = LLMSettings("local")
    slots = ServerOptions().slots
    assert (s.max_tokens, s.max_retries, s.max_concurrency) == (LOCAL_MAX_TOKENS, 1, slots)
    assert s.timeout == local_defaults().timeout_for(LOCAL_MAX_TOKENS)
    assert LLMSettings.from_dict(s.to_dict()) == s
    longer = LLMSettings("local", max_tokens=320)
    assert longer.timeout is not None and s.timeout is not None and longer.timeout > s.timeout


def test_explicit_values_win_and_other_models_keep_their_defaults() -> None:
    s = LLMSettings("local", timeout=300, max_concurrency=1, max_retries=0, max_tokens=64)
    assert (s.timeout, s.max_concurrency, s.max_retries, s.max_tokens) == (300, 1, 0, 64)
    other = LLMSettings("openai/gpt-4o-mini")
    assert (other.timeout, other.max_retries, other.max_concurrency, other.max_tokens) == (
        60.0,
        3,
        8,
        None,
    )
    with pytest.raises(ValueError, match="max_concurrency must be"):
        LLMSettings("local", max_concurrency=0)


def test_concurrency_follows_the_slots_and_the_timeout_the_output() -> None:
    two = local_defaults(ServerOptions(context=4096, slots=2))
    assert two.max_concurrency == 2 and two.prompt_tokens == 2048
    assert two.timeout_for(320) - two.timeout_for(160) == pytest.approx(40.0, abs=1)


class Server:
    model, base_url, api_key = "openai/smollm2-135m", "http://127.0.0.1:1/v1", "k"


class Inner:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def complete(self, request: dict[str, Any], *, api_key: str | None, timeout: float) -> Any:
        self.sent.append({**request, "timeout": timeout})
        return RawReply('{"score": 1}', "stop", None, "m", 5, 2, 0.0)


def test_free_text_requests_carry_the_repeat_penalty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lt, "ensure_local_server", lambda name: Server())
    inner = Inner()
    client = LLMClient(LLMSettings("local"), transport=lt.LocalTransport(inner))  # type: ignore[arg-type]
    client.complete("Name a colour.")
    sent = inner.sent[-1]
    assert sent["extra_body"] == {"repeat_penalty": REPEAT_PENALTY}
    assert sent["max_tokens"] == LOCAL_MAX_TOKENS and sent["timeout"] == client.settings.timeout
    client.complete("Reply in JSON.", json_mode=True)
    assert "extra_body" not in inner.sent[-1] and "response_format" in inner.sent[-1]
