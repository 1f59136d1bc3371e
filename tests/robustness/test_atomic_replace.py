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


def test_leftovers_of_a_crash_are_named_and_the_next_save_removes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "index"
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(target)
    leftover = target / ".staging-0123abcd"
    leftover.mkdir()
    os.utime(leftover, (time.time() - 7200, time.time() - 7200))  # an old crash
    with caplog.at_level(logging.WARNING):
        _check_complete(target)
    assert ".staging-0123abcd" in caplog.text
    DenseIndex.build(IDS, np.ones((200, 16), dtype=np.float32)).save(target)
    assert not leftover.exists()
    assert len([p for p in target.iterdir() if p.name.startswith("v-")]) == 1


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
    assert (legacy / "CURRENT").is_file() and not (legacy / "config.json").exists()
    _check_complete(legacy)
