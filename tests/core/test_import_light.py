"""`import rag_multihop` must not pull in heavy or framework dependencies."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["torch", "litellm", "llama_index", "haystack", "sentence_transformers", "faiss"]


def test_top_level_import_is_light():
    code = f"import sys, rag_multihop\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_testing_helpers_import_light():
    """``rag_multihop.testing`` serves suites that have neither framework nor torch."""
    code = f"import sys, rag_multihop.testing\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
