"""Replacing a saved artifact is atomic: a reader finds the complete old or the complete new
one across an exception and across SIGKILL of the writer at any point (docs/guarantees.md)."""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rag_multihop._atomic import ArtifactError, artifact_path, atomic_directory
from rag_multihop.index.dense import DenseIndex

IDS = [f"p{i}" for i in range(200)]

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from rag_multihop.index.dense import DenseIndex
    target, ids = sys.argv[1], [f"p{i}" for i in range(200)]
    version = 0
    while True:
        version += 1
        vectors = np.full((200, 16), float(version % 7 + 1), dtype=np.float32)
        vectors[:, 0] += np.arange(200)
        DenseIndex.build(ids, vectors, normalize=False).save(target)
        print(version, flush=True)
    """
)


def _check_complete(target: Path) -> None:
    index = DenseIndex.load(target)
    assert index.ids == IDS and len(index) == 200
    _, found = index.search(np.ones((1, 16), dtype=np.float32), k=200)
    assert len(found[0]) == 200  # every vector of one version is there


def test_sigkill_at_any_point_leaves_a_complete_artifact(tmp_path: Path) -> None:
    target = tmp_path / "index"
    vectors = np.ones((200, 16), dtype=np.float32)
    DenseIndex.build(IDS, vectors, normalize=False).save(target)
    rng = random.Random(0)
    deadline = time.monotonic() + 60
    kills = 0
    while kills < 12 and time.monotonic() < deadline:
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        writer.stdout.readline()  # at least one save finished in this process
        time.sleep(rng.uniform(0.0, 0.05))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=10)
        writer.stdout.close()
        kills += 1
        _check_complete(target)
    assert kills >= 3


def test_an_exception_during_a_save_keeps_the_old_artifact(tmp_path: Path) -> None:
    target = tmp_path / "index"
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(target)
    with pytest.raises(RuntimeError, match="disk full"), atomic_directory(target) as staging:
        (staging / "config.json").write_text("{}")
        raise RuntimeError("disk full")
    _check_complete(target)
    assert not [p for p in target.iterdir() if p.name.startswith(".staging-")]


def test_a_pointer_to_a_missing_version_is_named(tmp_path: Path) -> None:
    target = tmp_path / "index"
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(target)
    (target / "CURRENT").write_text("v-gone")
    with pytest.raises(ArtifactError, match=r"CURRENT names 'v-gone'"):
        DenseIndex.load(target)


def test_folders_saved_before_versioning_still_load(tmp_path: Path) -> None:
    saved = tmp_path / "index"
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(saved)
    legacy = tmp_path / "legacy"
    artifact_path(saved).rename(legacy)  # the files directly in the folder, no CURRENT
    assert artifact_path(legacy) == legacy
    _check_complete(legacy)
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(legacy)  # upgrades it
    assert (legacy / "CURRENT").is_file() and artifact_path(legacy) != legacy
    assert (legacy / "config.json").exists()  # not provably the save's own: left in place
    _check_complete(legacy)


# --- what a save may delete, concurrent writers, killed writers (docs/guarantees.md) ---------

SAVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from rag_multihop.index.dense import DenseIndex
    target, writer, saves = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    for n in range(saves):
        vectors = np.zeros((200, 16), dtype=np.float32)
        vectors[:, 0], vectors[:, 1], vectors[:, 2] = writer, n, np.arange(200)
        DenseIndex.build([f"p{i}" for i in range(200)], vectors, normalize=False).save(target)
    """
)

READER = textwrap.dedent(
    """
    import sys, pathlib
    import numpy as np
    from rag_multihop.index.dense import DenseIndex
    target, stop = sys.argv[1], pathlib.Path(sys.argv[2])
    probe = np.zeros((1, 16), dtype=np.float32)
    probe[0, :2] = 1.0  # scores every row by writer + save number: one value per version
    loads = 0
    while not stop.exists() or loads == 0:
        index = DenseIndex.load(target)
        scores, ids = index.search(probe, k=200)
        assert sorted(ids[0]) == sorted(f"p{i}" for i in range(200)), "rows missing"
        assert np.ptp(scores[0]) == 0, f"rows of two versions: {sorted(set(scores[0]))[:4]}"
        loads += 1
    print(loads)
    """
)

PAUSED_COMMIT = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from rag_multihop.index.dense import DenseIndex
    replace = os.replace
    def paused(source, destination):  # stop where the commit renames the staging folder
        if ".staging-" in str(source):
            print("committing", flush=True)
            time.sleep(120)
        replace(source, destination)
    os.replace = paused
    vectors = np.full((200, 16), 5.0, dtype=np.float32)
    DenseIndex.build([f"p{i}" for i in range(200)], vectors, normalize=False).save(sys.argv[1])
    """
)


def _save(target: Path, value: float) -> None:
    vectors = np.zeros((200, 16), dtype=np.float32)
    vectors[:, 0], vectors[:, 2] = value, np.arange(200)
    DenseIndex.build(IDS, vectors, normalize=False).save(target)


def _value(target: Path) -> float:
    """The first coordinate the saved version was written with (see :func:`_save`)."""
    probe = np.zeros((1, 16), dtype=np.float32)
    probe[0, 0] = 1.0
    scores, ids = DenseIndex.load(target).search(probe, k=200)
    assert len(ids[0]) == 200 and np.ptp(scores[0]) == 0
    return float(scores[0][0])


def _child(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_save_keeps_the_users_own_files_and_folders(tmp_path: Path) -> None:
    target = tmp_path / "index"
    (target / "data").mkdir(parents=True)
    (target / "notes.txt").write_text("mine")
    (target / "data" / "table.csv").write_text("a,b")
    lookalike = target / f"v-{'0' * 32}"  # named like a version, but not written by a save
    lookalike.mkdir()
    (lookalike / "keep.txt").write_text("mine too")
    for value in (1.0, 2.0, 3.0):
        _save(target, value)
    assert _value(target) == 3.0
    assert (target / "notes.txt").read_text() == "mine"
    assert (target / "data" / "table.csv").read_text() == "a,b"
    assert (lookalike / "keep.txt").read_text() == "mine too"
    versions = [p for p in target.iterdir() if p.name.startswith("v-") and p != lookalike]
    assert versions == [artifact_path(target)]  # its own superseded versions are gone


def test_a_save_through_a_symlink_keeps_the_shared_folders_other_files(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "sub").mkdir(parents=True)
    (shared / "other.txt").write_text("shared")
    (shared / "sub" / "deep.txt").write_text("deep")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text("{}")
    link = tmp_path / "link"
    link.symlink_to(shared, target_is_directory=True)
    (shared / f"v-{'a' * 32}").symlink_to(elsewhere, target_is_directory=True)
    for value in (1.0, 2.0):
        _save(link, value)
    assert _value(link) == 2.0 and link.is_symlink()
    assert (shared / "other.txt").read_text() == "shared"
    assert (shared / "sub" / "deep.txt").read_text() == "deep"
    assert (elsewhere / "config.json").read_text() == "{}"
    assert (shared / f"v-{'a' * 32}").is_symlink()


def test_concurrent_savers_both_finish_and_readers_see_whole_versions(tmp_path: Path) -> None:
    target, stop = tmp_path / "index", tmp_path / "stop"
    _save(target, 0.0)
    reader = _child(READER, target, stop)
    writers = [_child(SAVER, target, writer, 25) for writer in (10, 20)]
    try:
        outcomes = [writer.communicate(timeout=120) for writer in writers]
        stop.touch()
        loads, reader_errors = reader.communicate(timeout=60)
    finally:
        for child in (*writers, reader):
            if child.poll() is None:
                child.kill()
    for writer, (_, errors) in zip(writers, outcomes, strict=True):
        assert writer.returncode == 0, errors[-2000:]
    assert reader.returncode == 0, reader_errors[-2000:]
    assert int(loads) >= 1
    pointed = (target / "CURRENT").read_text()
    assert artifact_path(target) == target / pointed
    assert _value(target) in (10.0, 20.0)  # one writer's last save, complete


def test_a_writer_killed_while_committing_leaves_no_stuck_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "index"
    _save(target, 1.0)
    writer = _child(PAUSED_COMMIT, target)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "committing"  # holds the writers' lock
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.communicate(timeout=30)
    with caplog.at_level(logging.WARNING):
        assert _value(target) == 1.0  # the previous version, complete
    leftovers = [p for p in target.iterdir() if p.name.startswith(".staging-")]
    assert len(leftovers) == 1 and leftovers[0].name in caplog.text
    saver = _child(SAVER, target, 7, 1)  # would wait forever on a stuck lock
    try:
        _, errors = saver.communicate(timeout=60)
    finally:
        if saver.poll() is None:
            saver.kill()
    assert saver.returncode == 0, errors[-2000:]
    assert _value(target) == 7.0
    assert not leftovers[0].exists()  # the dead writer's staging folder is removed


def test_a_version_saved_before_markers_loads_and_the_next_save_replaces_it(
    tmp_path: Path,
) -> None:
    target = tmp_path / "index"
    _save(target, 1.0)
    old = artifact_path(target)
    (old / ".rag-multihop-version").unlink()  # as rag-multihop wrote versions before markers
    for lock in target.glob(".rag-multihop-*.lock"):
        lock.unlink()
    assert _value(target) == 1.0
    _save(target, 2.0)
    assert _value(target) == 2.0 and not old.exists()  # the version CURRENT named is its own


def test_an_association_model_saves_over_what_a_killed_first_save_left(tmp_path: Path) -> None:
    # a save killed before its first commit leaves the lock files and its marked staging
    # folder, and no CURRENT: that folder is empty to the next save, not somebody else's
    import uuid

    from rag_multihop._atomic import READ_LOCK, VERSION_MARKER, WRITE_LOCK
    from rag_multihop.association import AssociationReranker, TrainingConfig
    from rag_multihop.testing import HashingEncoder

    target = tmp_path / "aar"
    staging = target / f".staging-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    (staging / VERSION_MARKER).write_text("a version folder\n")
    (staging / "model.safetensors").write_bytes(b"half")
    for name in (WRITE_LOCK, READ_LOCK):
        (target / name).touch()
    encoder = HashingEncoder(16)
    texts = ["Rope is a film.", "Hitchcock made it.", "Jaws is a film.", "Spielberg made it."]
    reranker = AssociationReranker(
        encoder=encoder, training=TrainingConfig(epochs=2, batch_size=2, seed=0)
    )
    reranker.fit(["a", "b", "c", "d"], encoder.encode(texts), [("a", "b"), ("c", "d")])
    reranker.save(target)
    assert AssociationReranker.load(target, encoder=encoder).passage_ids == ("a", "b", "c", "d")
    other = tmp_path / "other"  # a folder of somebody else's is still refused
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a saved association model"):
        reranker.save(other)
