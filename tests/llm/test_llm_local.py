"""The local-model runtime without starting a server: names, settings, install errors."""

from __future__ import annotations

import pytest

from rag_multihop.llm import LLMClient, LLMConfigError, LLMSettings, local


def test_local_model_strings() -> None:
    assert local.is_local_model("local") and local.is_local_model("local/smollm2-135m")
    assert not local.is_local_model("openai/local") and not local.is_local_model("localhost")
    assert local.local_model_name("local") == local.DEFAULT_LOCAL_MODEL
    with pytest.raises(LLMConfigError, match="unknown local model 'gpt5'.*smollm2-135m"):
        local.local_model_name("local/gpt5")


def test_settings_accept_local_models_and_refuse_an_api_base() -> None:
    assert LLMSettings("local").model == "local"
    with pytest.raises(LLMConfigError, match="choose from: smollm2-135m"):
        LLMSettings("local/nonexistent")
    with pytest.raises(ValueError, match="api_base must be None for the local model"):
        LLMSettings("local", api_base="http://127.0.0.1:8080/v1")


def test_a_missing_model_package_names_the_install_command() -> None:
    spec = local.LocalModelSpec("no_such_model_package_xyz", "m.gguf", install="run X")
    with pytest.raises(LLMConfigError, match=r"m\.gguf was not found.*run X"):
        spec.path()


def test_a_missing_server_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_package(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(local.importlib, "import_module", no_package)
    with pytest.raises(LLMConfigError, match="rag-multihop llm install"):
        local.server_binary()
    # the client reaches the same error at its first call, not at construction
    llm = LLMClient("local")
    with pytest.raises(LLMConfigError, match="llama.cpp's server is not installed"):
        llm.complete("Hello?")
