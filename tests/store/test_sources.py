"""Source documents in a corpus index: re-ingesting a changed document replaces its chunks
in one version, a document moves its chunks, a killed write leaves nothing untracked."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.store import CorpusIndex
from rag_multihop.store.sources import delete_sources, write_sources


def _chunks(prefix: str, texts: list[str]) -> list[Passage]:
    return [Passage(f"{prefix}-{i}", text, "notes.txt") for i, text in enumerate(texts)]


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)


@pytest.fixture
def index(tmp_path) -> CorpusIndex:
    return CorpusIndex.create(tmp_path / "idx", dim=8)


def test_a_changed_document_replaces_its_chunks_in_one_version(index) -> None:
    old = _chunks("run1", ["Rope is a film.", "It was made in 1948.", "Hitchcock directed it."])
    other = [Passage("b", "Vertigo is a film.", "b.txt")]
    assert write_sources(index, [*old, *other], _vectors(4), ["a.txt"] * 3 + ["b.txt"]) == 1
    new = _chunks("run2", ["Rope is a 1948 film.", "Hitchcock directed it."])
    assert write_sources(index, new, _vectors(2, 1), ["a.txt", "a.txt"]) == 2
    assert index.snapshot().corpus.ids == ["b", "run2-0", "run2-1"]
    assert index.info()["deleted"] == 3
    assert write_sources(index, new, _vectors(2, 1), ["a.txt", "a.txt"]) == 2  # unchanged
    assert delete_sources(index, ["a.txt", "never-written.txt"]) == 3
    assert index.snapshot().corpus.ids == ["b"]
    assert delete_sources(index, []) == 3


def test_passages_without_a_source_are_plain_upserts(index) -> None:
    write_sources(index, _chunks("x", ["One.", "Two."]), _vectors(2), [None, None])
    write_sources(index, _chunks("y", ["Three."]), _vectors(1, 1), [None])
    assert index.snapshot().corpus.ids == ["x-0", "x-1", "y-0"]


def test_a_chunk_that_moves_to_another_document_stays_when_the_first_changes(index) -> None:
    shared = Passage("s", "A paragraph both files quote.", "a.txt")
    write_sources(index, [shared, Passage("a1", "Only in a.", "a.txt")], _vectors(2), ["a", "a"])
    write_sources(index, [shared], _vectors(2)[:1], ["b"])  # now b's
    write_sources(index, [Passage("a2", "A rewritten.", "a.txt")], _vectors(1, 2), ["a"])
    assert sorted(index.snapshot().corpus.ids) == ["a2", "s"]


def test_a_write_killed_after_recording_is_cleaned_by_the_next(index, monkeypatch) -> None:
    write_sources(index, _chunks("run1", ["First version."]), _vectors(1), ["a"])
    with monkeypatch.context() as patch:

        def killed(*args, **kwargs):
            raise KeyboardInterrupt

        patch.setattr(CorpusIndex, "upsert", killed)
        with pytest.raises(KeyboardInterrupt):
            write_sources(index, _chunks("run2", ["Second version."]), _vectors(1, 1), ["a"])
    assert index.snapshot().corpus.ids == ["run1-0"]
    write_sources(index, _chunks("run3", ["Third version."]), _vectors(1, 2), ["a"])
    assert index.snapshot().corpus.ids == ["run3-0"]


def test_bad_sources_are_refused_with_the_reason(index) -> None:
    chunks = _chunks("c", ["Text."])
    with pytest.raises(ValueError, match="got 2 sources for 1 passages"):
        write_sources(index, chunks, _vectors(1), ["a", "b"])
    with pytest.raises(ValueError, match="a source must be a non-empty string, got ''"):
        write_sources(index, chunks, _vectors(1), [""])
    with pytest.raises(TypeError, match="not one string"):
        delete_sources(index, "a.txt")
    with pytest.raises(ValueError, match="sources must be non-empty strings"):
        delete_sources(index, [""])


def test_upsert_deletes_other_ids_in_the_same_version(index) -> None:
    index.add(_chunks("c", ["One.", "Two.", "Three."]), _vectors(3))
    version = index.upsert(_chunks("d", ["Four."]), _vectors(1, 1), delete=["c-0", "gone", "c-2"])
    assert version == 2 and index.snapshot().corpus.ids == ["c-1", "d-0"]
    assert index.upsert([], np.zeros((0, 8)), delete=["c-1"]) == 3
    assert index.upsert([], np.zeros((0, 8)), delete=["nothing-here"]) == 3
    with pytest.raises(TypeError, match="not one string"):
        index.upsert([], np.zeros((0, 8)), delete="c-1")
    with pytest.raises(ValueError, match="ids to delete must be non-empty strings"):
        index.upsert([], np.zeros((0, 8)), delete=[""])


def test_a_refused_write_leaves_every_passage_under_its_old_source(index) -> None:
    write_sources(
        index, [Passage("s", "Shared."), Passage("a1", "Only a.")], _vectors(2), ["A"] * 2
    )
    bad = np.full((1, 8), np.nan, dtype=np.float32)
    with pytest.raises(ValueError, match="NaN"):
        write_sources(index, [Passage("s", "Shared, changed.")], bad, ["B"])
    with pytest.raises(ValueError, match="NaN"):
        write_sources(index, [Passage("new", "Never written.")], bad, ["A"])
    delete_sources(index, ["A"])
    assert index.snapshot().n_live == 0  # s was still A's: the refused write moved nothing


def test_a_passage_written_again_without_a_source_leaves_its_old_source(index) -> None:
    write_sources(index, [Passage("x", "X."), Passage("y", "Y.")], _vectors(2), ["A", "A"])
    write_sources(index, [Passage("x", "X, now on its own.")], _vectors(1, 1), [None])
    write_sources(index, [Passage("y2", "Y rewritten.")], _vectors(1, 2), ["A"])
    assert sorted(index.snapshot().corpus.ids) == ["x", "y2"]  # x was not A's any more


def test_a_corrupt_map_is_named_and_one_string_is_no_list_of_sources(index) -> None:
    from rag_multihop._atomic import ArtifactError
    from rag_multihop.store.sources import SOURCES_FILE

    with pytest.raises(TypeError, match="not a str"):
        write_sources(index, [Passage("a", "A.")], _vectors(1), "a")  # type: ignore[arg-type]
    (index.path / SOURCES_FILE).write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(ArtifactError, match=r"sources\.sqlite is not a sources map"):
        write_sources(index, [Passage("a", "A.")], _vectors(1), ["a.txt"])
    with pytest.raises(ArtifactError, match=r"sources\.sqlite is not a sources map"):
        delete_sources(index, ["a.txt"])
