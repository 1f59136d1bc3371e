"""LLMClient: settings, keys, retries, timeouts, concurrency, cache and accounting.

Provider behaviour (429, 5xx, 401, 404, 400) replays hand-written cassettes in OpenAI's wire
format (tests/cassettes/README.md); timeouts and concurrency use plain-object fakes and, for
one timeout, litellm against a local socket that never answers.
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from vcr.cassette import Cassette

from rag_multihop.llm import (
    LLMAccount,
    LLMCache,
    LLMCallError,
    LLMClient,
    LLMConfigError,
    LLMSettings,
    ProviderError,
    RawReply,
)
from rag_multihop.llm.client import PLACEHOLDER_API_KEY
from rag_multihop.testing import FakeTransport
from tests.conftest import CASSETTES

MODEL = "openai/gpt-4o-mini"
OPENAI_BASE = "https://api.openai.com/v1"  # the host the hand-written cassettes answer for
PROMPT = "Name the capital of France in one word."


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    # these cassettes script provider failures and must never be re-recorded
    return {**vcr_config, "record_mode": "none"}


@pytest.fixture(autouse=True)
def _openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def settings(**overrides: object) -> LLMSettings:
    return LLMSettings(**{"model": MODEL, "api_base": OPENAI_BASE, **overrides})  # type: ignore[arg-type]


class Failure(Exception):
    """A provider-like error: classified by ``status_code``, may carry a Retry-After header."""

    def __init__(self, status_code: int, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.headers = {"retry-after": retry_after} if retry_after is not None else {}


def no_sleep(seconds: float) -> None:
    raise AssertionError(f"no retry expected, but the client waited {seconds} s")


OK = RawReply("Paris", model="gpt-4o-mini", prompt_tokens=14, completion_tokens=1, cost=2.7e-06)


# ---------------------------------------------------------------------- settings


def test_settings_round_trip_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-very-secret")
    s = LLMSettings(MODEL, api_key_env="MY_LLM_KEY", timeout=12.5, max_tokens=64)
    assert LLMSettings.from_dict(s.to_dict()) == s
    transport = FakeTransport(script=[OK])
    client = LLMClient(s, transport=transport)
    client.complete(PROMPT)
    assert transport.api_keys == ["sk-very-secret"]
    for text in (repr(s), str(s.to_dict()), repr(client)):
        assert "sk-very-secret" not in text


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("timeout", 0, r"timeout must be in \(0, 3600\], got 0"),
        ("timeout", float("nan"), "timeout must be"),
        ("max_retries", -1, "max_retries must be an integer in \\[0, 20\\], got -1"),
        ("max_retries", 1.5, "max_retries must be an integer"),
        ("temperature", 3, r"temperature must be in \[0, 2\], got 3"),
        ("max_concurrency", 0, "max_concurrency must be an integer in \\[1, 1024\\]"),
        ("max_tokens", 0, "max_tokens must be an integer >= 1"),
        ("backoff_max", 0.5, r"backoff_max must be in \[1, 3600\], got 0.5"),
        ("api_base", "localhost:8000", "api_base must be an http"),
        ("input_cost_per_token", 1e-6, "must be given together"),
    ],
)
def test_settings_validation_names_parameter_and_value(
    field: str, value: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LLMSettings(MODEL, **{field: value})


def test_api_key_env_rejects_a_key_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="NAME of the environment variable") as info:
        LLMSettings(MODEL, api_key_env="sk-proj-abc-123")
    assert "sk-proj-abc-123" not in str(info.value)


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"unknown LLMSettings keys \['api_key'\]"):
        LLMSettings.from_dict({"model": MODEL, "api_key": "x"})


def test_per_call_overrides_are_validated_and_used() -> None:
    transport = FakeTransport(script=[OK])
    client = LLMClient(settings(temperature=0.0), transport=transport)
    with pytest.raises(ValueError, match="temperature must be in"):
        client.complete(PROMPT, temperature=5)
    with pytest.raises(ValueError, match=r"messages\[0\] must have role"):
        client.complete([{"role": "tool", "content": "x"}])
    client.complete(PROMPT, temperature=0.7, max_tokens=5)
    assert transport.requests[-1]["temperature"] == 0.7
    assert transport.requests[-1]["max_tokens"] == 5


# ---------------------------------------------------------------------- keys and models


def test_no_key_names_the_provider_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMConfigError, match="set the environment variable OPENAI_API_KEY"):
        LLMClient(MODEL).complete(PROMPT)


def test_unset_api_key_env_is_named_and_read_at_call_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TEAM_LLM_KEY", raising=False)
    transport = FakeTransport(script=[OK])
    client = LLMClient(LLMSettings(MODEL, api_key_env="TEAM_LLM_KEY"), transport=transport)
    with pytest.raises(LLMConfigError, match="TEAM_LLM_KEY"):
        client.complete(PROMPT)
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-later")
    client.complete(PROMPT)
    assert transport.api_keys == ["sk-later"]


def test_local_server_without_key_gets_a_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = FakeTransport(script=[OK])
    transport.missing = ["OPENAI_API_KEY"]
    client = LLMClient(
        LLMSettings("openai/qwen2.5-7b", api_base="http://localhost:8000/v1"), transport=transport
    )
    client.complete(PROMPT)
    assert transport.api_keys == [PLACEHOLDER_API_KEY]
    assert transport.requests[0]["api_base"] == "http://localhost:8000/v1"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("nonsense-model", "unknown model string 'nonsense-model'"),
        ("antropic/claude-3-5-haiku-latest", "did you mean 'anthropic'"),
    ],
)
def test_unknown_model_string_is_a_config_error(
    model: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(LLMConfigError, match=message):
        LLMClient(model).complete(PROMPT)
    assert capsys.readouterr().out == ""  # litellm's "Provider List" banner is not printed


@pytest.mark.vcr
def test_rejected_key_is_a_config_error(vcr: Cassette) -> None:
    client = LLMClient(settings(max_retries=3), sleep=no_sleep)
    with pytest.raises(LLMConfigError, match=r"rejected the API key .* \(HTTP 401\)"):
        client.complete(PROMPT)
    assert vcr.play_count == 1


@pytest.mark.vcr
def test_unserved_model_is_a_config_error(vcr: Cassette) -> None:
    client = LLMClient(settings(model="openai/gpt-4o-minx"), sleep=no_sleep)
    with pytest.raises(LLMConfigError, match=r"does not serve model 'openai/gpt-4o-minx'"):
        client.complete(PROMPT)
    assert vcr.play_count == 1


# ---------------------------------------------------------------------- retries


@pytest.mark.vcr
def test_rate_limit_then_success(vcr: Cassette) -> None:
    sleeps: list[float] = []
    client = LLMClient(settings(max_retries=2, backoff_base=0.25), sleep=sleeps.append)
    reply = client.complete(PROMPT)
    assert reply.text == "Paris"
    assert sleeps == [1.0]  # Retry-After: 1 outweighs the 0.125-0.25 s exponential backoff
    assert (reply.account.calls, reply.account.retries) == (1, 1)
    assert client.total.retries == 1
    assert vcr.play_count == 2


@pytest.mark.vcr
def test_server_errors_exhaust_the_retry_budget(vcr: Cassette) -> None:
    sleeps: list[float] = []
    client = LLMClient(
        settings(max_retries=2, backoff_base=0.5), sleep=sleeps.append, rng=random.Random(0)
    )
    with pytest.raises(LLMCallError, match="failed after 3 attempt") as info:
        client.complete(PROMPT)
    assert info.value.attempts == 3
    assert getattr(info.value.__cause__, "status_code", None) == 502
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # doubling, jittered
    assert vcr.play_count == 3


@pytest.mark.vcr
def test_bad_request_is_not_retried(vcr: Cassette) -> None:
    client = LLMClient(settings(max_retries=3), sleep=no_sleep)
    with pytest.raises(LLMCallError, match=r"rejected the request \(HTTP 400\)") as info:
        client.complete(PROMPT)
    assert info.value.attempts == 1
    assert vcr.play_count == 1


def test_retry_after_is_capped_by_backoff_max() -> None:
    sleeps: list[float] = []
    transport = FakeTransport(script=[Failure(429, retry_after="120"), OK])
    client = LLMClient(settings(backoff_max=5.0), transport=transport, sleep=sleeps.append)
    assert client.complete(PROMPT).text == "Paris"
    assert sleeps == [5.0]


@pytest.mark.parametrize("status", [400, 500])
def test_a_provider_error_echoing_the_key_is_redacted(status: int) -> None:
    key = "sk-proj-" + "a1B2" * 10
    echo = Failure(status)
    echo.args = (f"HTTP {status}: bad request {{'authorization': 'Bearer {key}'}}",)
    client = LLMClient(settings(max_retries=0), transport=FakeTransport(script=[echo]))
    with pytest.raises(LLMCallError) as info:
        client.complete(PROMPT)
    assert key not in str(info.value) and "Bearer [redacted]" in str(info.value)


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, LLMCallError), (401, LLMConfigError), (404, LLMConfigError), (503, LLMCallError)],
)
def test_a_provider_error_echoing_the_key_stays_out_of_the_traceback(
    status: int, error: type[Exception]
) -> None:
    key = "sk-proj-" + "a1B2" * 10
    echo = Failure(status)
    echo.args = (f"HTTP {status} from proxy: {{'authorization': 'Bearer {key}'}}",)
    client = LLMClient(settings(max_retries=0), transport=FakeTransport(script=[echo]))
    with pytest.raises(error) as info:
        client.complete(PROMPT)
    text = "".join(traceback.format_exception(info.value))
    assert key not in text
    assert (
        f"ProviderError: tests.llm.test_llm_client.Failure: HTTP {status} from proxy: "
        "{'authorization': 'Bearer [redacted]'}" in text
    )
    cause = info.value.__cause__
    assert isinstance(cause, ProviderError) and cause.status_code == status
    assert info.value.__context__ is None  # the provider's exception is not kept there either


def test_a_bug_in_the_transport_is_not_retried_or_wrapped() -> None:
    transport = FakeTransport(script=[KeyError("choices")])
    client = LLMClient(settings(), transport=transport, sleep=no_sleep)
    with pytest.raises(KeyError):
        client.complete(PROMPT)
    assert len(transport.requests) == 1


# ---------------------------------------------------------------------- timeouts


def test_timeouts_are_retried_then_raised() -> None:
    sleeps: list[float] = []
    transport = FakeTransport(script=[TimeoutError("read timed out")])
    client = LLMClient(settings(max_retries=2), transport=transport, sleep=sleeps.append)
    with pytest.raises(LLMCallError, match=r"after 3 attempt.*timeout=60 s") as info:
        client.complete(PROMPT)
    assert isinstance(info.value.__cause__, ProviderError)
    assert info.value.__cause__.type_name == "TimeoutError"
    assert len(sleeps) == 2 and len(transport.requests) == 3


def test_timeout_then_success() -> None:
    transport = FakeTransport(script=[TimeoutError("read timed out"), OK])
    client = LLMClient(settings(max_retries=1), transport=transport, sleep=lambda s: None)
    reply = client.complete(PROMPT)
    assert reply.text == "Paris" and reply.account.retries == 1


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    server.close()
    for conn in accepted:
        conn.close()


@pytest.mark.anyio
async def test_litellm_timeout_against_a_silent_server(silent_server: str) -> None:
    sleeps: list[float] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    client = LLMClient(
        LLMSettings(MODEL, api_base=silent_server, timeout=0.3, max_retries=1),
        async_sleep=record_sleep,
    )
    start = time.perf_counter()
    with pytest.raises(LLMCallError, match="after 2 attempt") as info:
        await client.acomplete(PROMPT)
    assert getattr(info.value.__cause__, "status_code", None) == 408  # litellm.Timeout
    assert len(sleeps) == 1
    assert time.perf_counter() - start < 10


# ---------------------------------------------------------------------- concurrency


@pytest.mark.anyio
async def test_async_requests_in_flight_never_exceed_the_limit() -> None:
    transport = FakeTransport(script=[OK], delay=0.01)
    client = LLMClient(settings(max_concurrency=3), transport=transport)
    replies = await asyncio.gather(*(client.acomplete(f"q{i}") for i in range(20)))
    assert len(replies) == 20
    assert transport.peak == 3


def test_sync_requests_in_flight_never_exceed_the_limit() -> None:
    transport = FakeTransport(script=[OK], delay=0.01)
    client = LLMClient(settings(max_concurrency=2), transport=transport)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: client.complete(f"q{i}"), range(16)))
    assert transport.peak == 2


@pytest.mark.anyio
async def test_map_async_keeps_order_and_limits_items() -> None:
    active, peak = 0, 0

    async def work(i: int) -> int:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.001 * (10 - i))
        active -= 1
        return i * i

    client = LLMClient(settings(), transport=FakeTransport(script=[OK]))
    assert await client.map_async(work, range(10), limit=4) == [i * i for i in range(10)]
    assert peak == 4
    with pytest.raises(ValueError, match="limit must be an integer >= 1"):
        await client.map_async(work, range(3), limit=0)


@pytest.mark.anyio
async def test_map_async_first_error_cancels_the_rest() -> None:
    finished: list[int] = []

    async def work(i: int) -> int:
        if i == 0:
            raise RuntimeError("boom")
        await asyncio.sleep(0.5)
        finished.append(i)
        return i

    client = LLMClient(settings(), transport=FakeTransport(script=[OK]))
    with pytest.raises(RuntimeError, match="boom"):
        await client.map_async(work, range(5))
    await asyncio.sleep(0)
    assert finished == []


def test_run_batch_reuses_one_loop_and_refuses_a_running_loop() -> None:
    loops: list[int] = []

    async def work(i: int) -> int:
        loops.append(id(asyncio.get_running_loop()))
        return i

    with LLMClient(settings(), transport=FakeTransport(script=[OK])) as client:
        assert client.run_batch(work, [1, 2]) == [1, 2]
        assert client.run_batch(work, [3]) == [3]
        assert len(set(loops)) == 1

        async def nested() -> None:
            client.run_batch(work, [1])

        with pytest.raises(RuntimeError, match="await client.map_async"):
            asyncio.run(nested())


# ---------------------------------------------------------------------- cache and accounts


class RefusingTransport(FakeTransport):
    def check_model(self, model: str) -> None:
        raise AssertionError("a cache hit must not reach the transport")


@pytest.mark.vcr
def test_cache_hit_avoids_the_http_call(
    vcr: Cassette, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "llm.sqlite"
    client = LLMClient(settings(), cache=LLMCache(path))
    first = client.complete(PROMPT)
    second = client.complete(PROMPT)
    assert vcr.play_count == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text == "Paris"
    assert second.account == LLMAccount(cache_hits=1)
    assert client.total.calls == 1 and client.total.cache_hits == 1

    # another process: no key, no provider, same file
    monkeypatch.delenv("OPENAI_API_KEY")
    other = LLMClient(settings(), cache=LLMCache(path), transport=RefusingTransport(script=[OK]))
    assert other.complete(PROMPT).text == "Paris"
    assert len(LLMCache(path)) == 1


def test_account_tokens_and_cost() -> None:
    unpriced = RawReply("x", prompt_tokens=100, completion_tokens=20, cost=None)
    client = LLMClient(settings(), transport=FakeTransport(script=[unpriced]))
    reply = client.complete(PROMPT)
    assert reply.account.cost is None and reply.account.total_tokens == 120
    assert reply.account.wall_time_s >= 0

    priced = LLMClient(
        settings(input_cost_per_token=1e-6, output_cost_per_token=2e-6),
        transport=FakeTransport(script=[unpriced]),
    )
    assert priced.complete(PROMPT).account.cost == pytest.approx(100e-6 + 40e-6)
    assert priced.complete(PROMPT).account.calls == 1
    assert priced.total.cost == pytest.approx(2 * 140e-6)
    assert priced.total.calls == 2


def test_cassettes_hold_no_credentials() -> None:
    paths = sorted(CASSETTES.rglob("*.yaml"))
    assert paths
    for path in paths:
        text = path.read_text()
        assert "Bearer " not in text, path
        for interaction in yaml.safe_load(text)["interactions"]:
            names = {name.lower() for name in interaction["request"]["headers"]}
            assert not names & {"authorization", "api-key", "x-api-key", "cookie"}, path


def test_importing_the_llm_package_does_not_import_litellm() -> None:
    code = "import sys, rag_multihop.llm\nprint('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
