"""The package's examples run end to end (offline, bundled demo corpus and MiniLM)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(p for p in FOLDER.glob("*.py") if p.stem != "chroma")  # chroma: below


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(script: Path) -> None:
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "R@" in out.stdout or "trained on" in out.stdout


@pytest.mark.slow
def test_chroma_example_runs_against_a_chroma_server(chroma_server) -> None:
    host, port = chroma_server
    command = [sys.executable, str(FOLDER / "chroma.py"), "--host", host, "--port", str(port)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("async = sync: True") == 4, out.stdout
