#!/usr/bin/env bash
# The release check (run by tests/run.sh): builds the three distributions (sdist + wheel of
# rag-multihop, llama-index-rag-multihop, rag-multihop-haystack), checks each wheel's
# metadata (licence expression and file, project URLs, no relative links in its description),
# installs the wheels (not the checkout) into a bare venv with CPU torch, and runs the README's
# Python quickstart there, plus an import of every adapter package and `rag-multihop --help`.
# Needs `build` and setuptools>=77 in the calling environment (the dev extra has both).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    HAYSTACK_TELEMETRY_ENABLED=False LITELLM_LOCAL_MODEL_COST_MAP=True
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for project in . integrations/llama-index integrations/haystack; do
    # --no-isolation: the calling venv's setuptools and build; build/ and *.egg-info stay out
    # of the checkout
    python -m build --no-isolation --outdir "$work/dist" "$project" >"$work/build.log" 2>&1 ||
        { cat "$work/build.log"; exit 1; }
done
python scripts/release_metadata.py "$work"/dist/*.whl
python -m venv "$work/venv"
pip_install() { "$work/venv/bin/python" -m pip install --quiet "$@" >"$work/pip.log" 2>&1 ||
    { cat "$work/pip.log"; exit 1; }; }
pip_install torch==2.13.0  # the CPU build first, as the README's install says
core=("$work"/dist/rag_multihop-*.whl)
pip_install "${core[0]}[encoders]" \
    "$work"/dist/llama_index_rag_multihop-*.whl "$work"/dist/rag_multihop_haystack-*.whl
python scripts/release_metadata.py --quickstart README.md >"$work/quickstart.py"
cd "$work"  # not the checkout: everything must come from the installed wheels
"$work/venv/bin/python" - <<'PY'
import importlib, pathlib, sys
import rag_multihop
assert "site-packages" in rag_multihop.__file__, rag_multihop.__file__
for name in ("llama_index.postprocessor.rag_multihop", "llama_index.retrievers.rag_multihop",
             "llama_index.embeddings.rag_multihop", "llama_index.llms.rag_multihop",
             "haystack_integrations.components.rankers.rag_multihop",
             "haystack_integrations.components.retrievers.rag_multihop",
             "haystack_integrations.components.joiners.rag_multihop",
             "haystack_integrations.components.embedders.rag_multihop",
             "haystack_integrations.components.writers.rag_multihop"):
    importlib.import_module(name)
print("adapter packages import from the wheels")
PY
"$work/venv/bin/rag-multihop" --help >/dev/null
"$work/venv/bin/python" "$work/quickstart.py"
echo "release check passed: $(cd "$work/dist" && ls | tr '\n' ' ')"
