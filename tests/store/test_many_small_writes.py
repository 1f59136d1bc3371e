"""An index that ingestion updates all day, one small batch at a time, without compaction:
its open files, its folder and its readers stay bounded and correct."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.store import CorpusIndex
from rag_multihop.store.segment import MANIFESTS
from tests.store.writing import checks_while_writing

WRITES = 40


def _vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _written(path: Path) -> CorpusIndex:
    """An index of 20 passages and ``WRITES`` one-passage adds, each its own segment (no
    merging: the worst case of an index fed all day)."""
    passages = [
        Passage(f"p{i}", f"Item {i} names Item {(i * 7) % 20}.", f"Item {i}") for i in range(20)
    ]
    index = CorpusIndex.build(path, passages, _vectors(20, 0), merge=None)
    for k in range(WRITES):
        index.add(
            [Passage(f"a{k}", f"Added {k} names Item {k % 20}.", f"Added {k}")], _vectors(1, k + 1)
        )
    return index


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd (Linux)")
def test_a_snapshot_of_many_small_segments_holds_few_open_files(tmp_path) -> None:
    index = _written(tmp_path / "idx")
    before = _open_files()
    snapshot = index.snapshot()
    assert len(snapshot.segments.segments) == WRITES + 1
    _ = (snapshot.dense_index, snapshot.link_graph, snapshot.entity_graph, snapshot.corpus.ids)
    # a map holds a descriptor; small arrays are read instead (~30 maps a segment before)
    assert _open_files() - before < WRITES


def test_only_the_current_manifest_stays_and_an_older_snapshot_still_reads(tmp_path) -> None:
    path = tmp_path / "idx"
    index = _written(path)
    old = index.snapshot()
    ids = list(old.corpus.ids)
    index.add([Passage("late", "Late names Item 3.", "Late")], _vectors(1, 99))
    index.delete(["a0"])
    assert [p.name for p in (path / MANIFESTS).iterdir()] == ["v-000043.json"]
    assert list(old.corpus.ids) == ids and old.n_live == len(ids)
    assert index.snapshot().n_live == len(ids)  # one added, one deleted


def test_readers_open_versions_while_a_writer_replaces_them(tmp_path) -> None:
    index = _written(tmp_path / "idx")

    def write() -> None:
        writer = CorpusIndex(tmp_path / "idx")
        for k in range(15):
            writer.add([Passage(f"w{k}", f"Written {k}.", f"Written {k}")], _vectors(1, 200 + k))

    def check() -> None:
        snapshot = index.snapshot()  # CURRENT, its manifest and arrays, of one version
        assert snapshot.n_live == len(snapshot.corpus.ids)

    assert checks_while_writing(write, check) > 0
    assert index.snapshot().n_live == 20 + WRITES + 15
