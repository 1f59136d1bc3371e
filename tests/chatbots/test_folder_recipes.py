"""docs/folders.md's recipes run as written: each framework reads a folder of one file of
each type into a corpus index, multihop answers from it, and one file is updated by its ids."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from folder_files import write_folder

from rag_multihop.store import CorpusIndex

DOC = Path(__file__).resolve().parents[2] / "docs" / "folders.md"


def recipe(section: str) -> list[str]:
    """The ``python`` blocks of one ``## section`` of docs/folders.md, in order."""
    text = DOC.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.parametrize(
    ("section", "index"), [("LlamaIndex", "my_docs.idx"), ("Haystack", "my_docs_hs.idx")]
)
def test_the_recipe_indexes_a_folder_and_updates_one_file(
    section: str, index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_folder(tmp_path / "my_docs")
    build, update = recipe(section)
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "recipe"}
    with contextlib.redirect_stdout(out):
        exec(compile(build, f"{DOC}:{section}", "exec"), namespace)
    assert "notes › Marit Hallendor" in out.getvalue().splitlines()[0]
    passages = {p.id: p for p in CorpusIndex(index).snapshot().corpus}
    titles = {p.title for p in passages.values()}
    assert {"manual › page 1", "manual › page 2", "notes › Family", "zelnov"} <= titles
    assert {"rope history › Veldmark Ropeworks", "rope history › Later years"} <= titles
    before = {i for i, p in passages.items() if p.title.startswith("notes")}
    exec(compile(update, f"{DOC}:{section} update", "exec"), namespace)
    after = {p.id: p for p in CorpusIndex(index).snapshot().corpus}
    notes = [p for p in after.values() if p.title.startswith("notes")]
    assert len(notes) == 1 and notes[0].text.endswith("She was born in Kelmsby and died in Oslo.")
    assert set(after) - {p.id for p in notes} == set(passages) - before  # the rest untouched
