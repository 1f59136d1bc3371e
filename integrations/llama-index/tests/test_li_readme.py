"""The quickstarts of the package README (and of the repository README) are the code of
`test_li_chroma.py`: every marked snippet of that test appears in them verbatim."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
READMES = [TESTS.parent / "README.md", TESTS.parents[2] / "README.md"]
MARKED = re.compile(
    r"\n([ \t]*)# --8<-- \[quickstart: (\w+)\]\n(.*?)\n[ \t]*# --8<-- \[end\]", flags=re.S
)


def snippets() -> dict[str, str]:
    source = (TESTS / "test_li_chroma.py").read_text()
    return {m.group(2): textwrap.dedent(m.group(3)) for m in MARKED.finditer(source)}


def test_the_test_marks_every_quickstart_snippet() -> None:
    assert set(snippets()) == {"index", "aar", "fusion", "bridge"}


@pytest.mark.parametrize("readme", READMES, ids=["package", "repository"])
def test_readme_quickstart_is_the_tested_code(readme: Path) -> None:
    if not readme.is_file():
        pytest.skip(f"{readme} is not part of this checkout")
    text = readme.read_text()
    missing = [name for name, code in snippets().items() if code not in text]
    assert missing == [], f"{readme}: quickstart snippets differ from the test: {missing}"
