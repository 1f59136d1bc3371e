"""The README's two commands exist, and CI runs the README's test command."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def _bash_blocks() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text()
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", readme, flags=re.S)]


def test_ci_runs_the_readme_test_command():
    assert "bash tests/run.sh" in _bash_blocks()
    assert "exec bash tests/run.sh" in (REPO_ROOT / ".ci" / "run").read_text()


def test_readme_demo_command_runs_the_demo():
    assert "bash examples/demo.sh" in _bash_blocks()
    script = (REPO_ROOT / "examples" / "demo.sh").read_text()
    assert "pip install --quiet torch==2.13.0" in script  # CPU build before anything pulls torch
    assert script.strip().splitlines()[-1].startswith("rag-multihop demo")
