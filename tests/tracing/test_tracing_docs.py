"""docs/tracing.md names every span the core opens."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def test_every_span_the_code_opens_is_in_the_docs_table() -> None:
    opened = set()
    for path in (REPO_ROOT / "rag_multihop").rglob("*.py"):
        code = [
            line
            for line in path.read_text().splitlines()
            if not line.lstrip().startswith((">>>", "..."))  # doctest examples
        ]
        opened |= set(re.findall(r'\bspan\(\s*"([a-z_]+\.[a-z0-9_.]+)"', "\n".join(code)))
    table = (REPO_ROOT / "docs" / "tracing.md").read_text().split("## Span names", 1)[1]
    documented = set(re.findall(r"^\| `([a-z0-9_.]+)`", table, flags=re.M))
    documented |= set(re.findall(r" / `([a-z0-9_.]+)`", table))
    assert len(opened) > 20  # the regex still finds the stages
    assert opened - documented == set()
