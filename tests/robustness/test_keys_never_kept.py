"""A key pasted into a model-name or variable-name field is refused and never echoed: not in
the message, the repr, a chained exception, a log record or the CLI's output; real model
strings all pass."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest

from rag_multihop.cli import main
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.secrets import (
    SecretInFieldError,
    check_env_var_name,
    check_model_name,
    looks_like_secret,
)

KEYS = {
    "openai": "sk-proj-Q8wXz2LmN4pR7tYv1BcD9eFgH3jKsAq6",
    "openai-legacy": "sk-4f9Ab2Cd8Ef1Gh7Ij3Kl5Mn0Op6Qr2St9UvWx4Yz1Ab3Cd",
    "anthropic": "sk-ant-api03-Zq7Xw2Vb9Nm4Lk1Jh8Gf5Dd3Ss6Aa0PpOoIiUuYyTtRrEe",
    "groq": "gsk_8Hj2Kl4Mn6Pq8Rs0Tu2Vw4Xy6Za8Bc0De2Fg4Hi6Jk8Lm0No",
    "google": "AIzaSyD4-9fGhJkL2mNpQrStUvWxYz01234567",
    "huggingface": "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
    "xai": "xai-7Kd9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl6Mn8Op0",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "mistral (no prefix)": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY",
    "together (hex)": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "bearer header": "Bearer sk-proj-Q8wXz2LmN4pR7tYv1BcD9eFgH3jKsAq6",
    "provider/key": "openai/sk-proj-Q8wXz2LmN4pR7tYv1BcD9eFgH3jKsAq6",
}

MODELS = [
    "local",
    "gpt-4o",
    "gpt-4o-mini-2024-07-18",
    "openai/gpt-4o-mini",
    "anthropic/claude-3-5-haiku-latest",
    "claude-3-5-sonnet-20241022",
    "ollama/llama3",
    "ollama/llama3.1:8b-instruct-q4_K_M",
    "groq/llama-3.1-70b-versatile",
    "gemini/gemini-1.5-pro-002",
    "xai/grok-2-latest",
    "perplexity/pplx-embed-context-v1-0.6b",
    "huggingface/meta-llama/Meta-Llama-3.1-8B-Instruct",
    "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0",
    "ft:gpt-4o-mini-2024-07-18:my-org:custom-suffix:9rZ3kX1Y",
    "azure/my-gpt4o-deployment",
    "openai/served-model-name",
    "sentence-transformers/all-MiniLM-L6-v2",
    "/root/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/"
    "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
]


def _never_shown(error: BaseException, key: str) -> None:
    """``key`` appears nowhere in ``error``: message, repr, traceback text, chained errors."""
    assert error.__cause__ is None and error.__context__ is None
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    for shown in (str(error), repr(error), text):
        assert key not in shown
        for part in key.split():
            assert part not in shown


@pytest.mark.parametrize("model", MODELS)
def test_real_model_strings_are_accepted(model: str) -> None:
    assert not looks_like_secret(model)
    assert check_model_name(model, "llm") == model


def test_no_model_litellm_knows_looks_like_a_key() -> None:
    litellm = pytest.importorskip("litellm")
    known = set(litellm.model_cost)
    assert len(known) > 1000
    assert sorted(m for m in known if looks_like_secret(m)) == []


@pytest.mark.parametrize("key", list(KEYS.values()), ids=list(KEYS))
def test_provider_keys_look_like_secrets(key: str) -> None:
    assert looks_like_secret(key)


@pytest.mark.parametrize("key", list(KEYS.values()), ids=list(KEYS))
def test_llm_settings_refuse_a_key_as_the_model_without_echo(key: str, caplog) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(SecretInFieldError) as caught:
        LLMSettings(key)
    assert "model looks like an API key" in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)  # says what to do instead
    _never_shown(caught.value, key)
    assert all(key not in record.getMessage() for record in caplog.records)
    with pytest.raises(SecretInFieldError) as again:
        LLMClient(key)
    _never_shown(again.value, key)
    with pytest.raises(SecretInFieldError):
        LLMSettings.from_dict({"model": key})


@pytest.mark.parametrize("key", [KEYS["openai"], KEYS["aws"], "sk_live_51HxYzAbCdEf"])
def test_a_key_as_a_variable_name_is_refused_without_echo(key: str) -> None:
    with pytest.raises(SecretInFieldError, match="NAME of the environment variable") as caught:
        check_env_var_name(key, "api_key_env")
    _never_shown(caught.value, key)
    with pytest.raises(SecretInFieldError) as settings:
        LLMSettings("openai/gpt-4o-mini", api_key_env=key)
    _never_shown(settings.value, key)


def test_the_bridge_and_coop_builders_name_the_llm_field() -> None:
    from rag_multihop.bridge.queries import make_client

    key = KEYS["anthropic"]
    with pytest.raises(SecretInFieldError, match="^llm looks like an API key") as caught:
        make_client(key)
    _never_shown(caught.value, key)


def test_an_encoder_name_that_is_a_key_is_refused_before_loading() -> None:
    from rag_multihop.encoders import load_encoder

    key = KEYS["huggingface"]
    with pytest.raises(SecretInFieldError, match="not a sentence-transformers model name") as e:
        load_encoder(key)
    _never_shown(e.value, key)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--llm", KEYS["openai"]], "--llm"),
        (["--option", f"llm={KEYS['groq']}"], "--option llm"),
        (["--option", f"llm_api_key_env={KEYS['openai']}"], "--option llm_api_key_env"),
        (["--option", KEYS["xai"]], "--option"),
    ],
)
def test_the_cli_refuses_a_key_before_any_work_without_echo(
    argv: list[str], field: str, tmp_path: Path, capsys
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--dataset", "2wiki", "--out", str(tmp_path / "out"), *argv])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert field in err
    for key in KEYS.values():
        assert key not in out + err
    assert not (tmp_path / "out").exists()


def test_llm_serve_refuses_a_key_as_the_local_model_without_echo(capsys) -> None:
    key = KEYS["openai"]
    assert main(["llm", "serve", "--model", key]) == 2
    out, err = capsys.readouterr()
    assert "model looks like an API key" in err and key not in out + err
