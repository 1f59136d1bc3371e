"""Every ANN kind searches the live rows after deletes, small segments are searched exactly,
factory strings are checked at the real dimension, the user's files in the index folder
survive every write, and corrupt files are errors naming them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop._atomic import ArtifactError
from rag_multihop.index.ann import make_ann_index
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, IndexSettings
from rag_multihop.store.segment import TEMP_PREFIX
from rag_multihop.types import Query
from tests.store.writing import checks_while_writing

DIM = 16
DEAD = ["p3", "p7", "p11", "p20", "p33"]


def _unit(rows: int, seed: int, dim: int = DIM) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _passages(ids: list[str]) -> list[Passage]:
    return [Passage(i, f"Passage {i} is about topic {i}.", f"Title {i}") for i in ids]


IDS = [f"p{i}" for i in range(40)]
VECTORS = _unit(40, 0)


def _build(path: Path, ann: str) -> CorpusIndex:
    return CorpusIndex.build(path, _passages(IDS), VECTORS, settings=IndexSettings(ann=ann))


ANN_KINDS = [
    "flat",
    "HNSW8",
    "IVF4,Flat",
    "IVF4,PQ2x4",
    "SQ8",
    "PQ4x4",
    "PCA8,IVF4,Flat",
    "IVF4,Flat,RFlat",
]
"""Exact, graph, inverted lists, product quantizer (no FAISS selector: over-fetched), scalar
quantizer, and IVF inside a pre-transform and a refine."""


def test_every_ann_kind_returns_only_live_passages_after_a_delete(tmp_path) -> None:
    live = [i for i, pid in enumerate(IDS) if pid not in DEAD]
    fresh = CorpusIndex.build(tmp_path / "fresh", _passages([IDS[i] for i in live]), VECTORS[live])
    queries = _unit(4, 1)
    for ann in ANN_KINDS:
        index = _build(tmp_path / ann, ann)
        index.delete(DEAD)
        snapshot = index.snapshot()
        _, found = snapshot.dense_index.search(queries, 5)
        assert all(row and not set(row) & set(DEAD) for row in found), ann
        if "IVF" not in ann:  # exhaustive, or a graph over so few: k live passages each
            assert all(len(row) == 5 for row in found), ann
        query = Query("topic", embedding=queries[0])
        retrieved = MultiHopRetriever.from_index(snapshot).retrieve(query, 3)
        assert retrieved and not {c.id for c in retrieved} & set(DEAD), ann
        if ann in ("flat", "HNSW8"):  # exact here: the same top 5 as a fresh build's
            assert found == fresh.snapshot().dense_index.search(queries, 5)[1], ann


def _top1(index: CorpusIndex, vectors: np.ndarray) -> list[str]:
    return [row[0] for row in index.snapshot().dense_index.search(vectors, 1)[1]]


def test_segments_too_small_to_train_their_ann_are_searched_exactly(tmp_path) -> None:
    index = _build(tmp_path / "idx", "IVF4,Flat")
    new = _unit(3, 2)
    index.add(_passages(["n1", "n2"]), new[:2])
    index.upsert([Passage("p5", "Passage p5 changed.", "Title p5")], new[2:])
    assert _top1(index, new) == ["n1", "n2", "p5"]
    index.delete([pid for pid in IDS if pid != "p5"])
    index.compact()  # 3 live rows: fewer than IVF4's 4 lists
    assert index.snapshot().corpus.ids == ["n1", "n2", "p5"]
    assert _top1(index, new) == ["n1", "n2", "p5"]
    small = CorpusIndex.build(
        tmp_path / "small",
        _passages(IDS[:6]),
        VECTORS[:6],
        settings=IndexSettings(ann="IVF256,Flat"),
    )
    assert _top1(small, VECTORS[:6]) == IDS[:6]
    assert make_ann_index(VECTORS[:6], "IVF256,Flat").ntotal == 6


def test_pq_factory_strings_are_checked_at_the_vectors_dimension(tmp_path) -> None:
    for ann in ("PQ16", "PQ48", "HNSW32,PQ32", "IVF4,PQ48"):
        assert IndexSettings(ann=ann).ann == ann
    vectors = _unit(40, 3, dim=32)
    index = CorpusIndex.build(
        tmp_path / "pq", _passages(IDS), vectors, settings=IndexSettings(ann="PQ16")
    )
    assert _top1(index, vectors[:3]) == IDS[:3]
    message = r"ann 'PQ16' does not fit dimension 20: .*multiple of the number of subquantizers"
    with pytest.raises(ValueError, match=message):
        CorpusIndex.create(tmp_path / "bad", dim=20, settings=IndexSettings(ann="PQ16"))
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="does not fit dimension 20"):
        make_ann_index(_unit(300, 4, dim=20), "PQ16")


def _user_files(root: Path) -> dict[str, str]:
    root.mkdir()
    files = {
        ".tmp-draft.txt": "draft",
        ".tmp-cache/x": "cached",
        "notes.txt": "notes",
        "segments-notes.md": "mine",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return files


def test_the_users_files_in_the_index_folder_survive_every_write(tmp_path) -> None:
    root = tmp_path / "folder"
    files = _user_files(root)
    index = CorpusIndex.build(root, _passages(IDS[:10]), VECTORS[:10])
    index.add(_passages(["n1"]), _unit(1, 5))
    index.delete(["p2"])
    leftovers = [root / f"{TEMP_PREFIX}dead", root / "segments" / f"{TEMP_PREFIX}dead"]
    leftovers[0].write_text("a killed writer's")
    leftovers[1].mkdir()
    legacy = root / "segments" / ".tmp-deadbeef"  # an older version's, in the index's folder
    legacy.mkdir()
    index.compact()
    assert {name: (root / name).read_text() for name in files} == files
    assert not any(path.exists() for path in [*leftovers, legacy])
    assert index.snapshot().n_live == 10


def test_a_failed_build_leaves_the_users_lock_named_file(tmp_path) -> None:
    root = tmp_path / "folder"
    root.mkdir()
    (root / "LOCK").write_text("my lock notes")
    with pytest.raises(ValueError, match="ids must be unique"):
        CorpusIndex.build(root, _passages(["a", "a"]), VECTORS[:2])
    assert (root / "LOCK").read_text() == "my lock notes"
    assert not (root / "CURRENT").exists()


def test_corrupt_files_are_artifact_errors_naming_them(tmp_path) -> None:
    index = _build(tmp_path / "idx", "flat")
    manifest_path = tmp_path / "idx" / "manifests" / "v-000001.json"
    manifest = json.loads(manifest_path.read_text())
    for field in ("dim", "settings"):
        manifest_path.write_text(json.dumps({k: v for k, v in manifest.items() if k != field}))
        with pytest.raises(ArtifactError, match=rf"v-000001\.json: {field} .*missing"):
            index.snapshot()
    manifest_path.write_text(json.dumps(manifest))
    (tmp_path / "idx" / "CURRENT").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ArtifactError, match="CURRENT is not UTF-8 text"):
        index.snapshot()


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -1.0, "5"])
def test_lock_timeout_must_be_a_finite_number_of_seconds(tmp_path, timeout) -> None:
    index = _build(tmp_path / "idx", "flat")
    with pytest.raises(ValueError, match="lock_timeout must be a finite number"):
        CorpusIndex(index.path, lock_timeout=timeout)
    with pytest.raises(ValueError, match="lock_timeout must be a finite number"):
        CorpusIndex.create(tmp_path / "other", dim=DIM, lock_timeout=timeout)


def test_info_while_a_writer_works_counts_what_is_there(tmp_path) -> None:
    # a writer removes superseded versions and temporaries while info() sums file sizes
    index = CorpusIndex.build(
        tmp_path / "idx", [Passage(f"p{i}", f"Text {i}.") for i in range(8)], np.eye(8, 8)
    )

    def write() -> None:
        writer = CorpusIndex(tmp_path / "idx")
        for i in range(12):
            writer.add([Passage(f"n{i}", f"New {i}.")], np.eye(1, 8))
            writer.compact()

    def check() -> None:
        assert index.info()["bytes"] > 0

    assert checks_while_writing(write, check) > 0
