"""Atomic replacement of saved folders (indexes, graphs, models), and safe loading.

A saved artifact ``target/`` holds version folders ``v-<id>/``, a pointer file ``CURRENT``
naming the complete one, and two lock files; anything else in ``target/`` belongs to someone
else and is never touched.

**Writers** use :func:`atomic_directory`: it yields an empty staging folder
``target/.staging-<id>/`` to write into; on success the staging folder is fsynced and renamed
to ``v-<id>/`` (atomic), then ``CURRENT`` is replaced atomically (temporary file, fsync,
``os.replace``). A crash or an exception before the pointer moves leaves the old version
current; after it, the new one. ``CURRENT`` only ever names a complete version.

**What a save deletes**: only what it can prove is a save's own and no longer current. Every
staging folder gets a marker file (:data:`VERSION_MARKER`) when it is created, and keeps it
when it becomes a version. After the pointer moved, a save deletes marked versions other than
the current one, the version ``CURRENT`` named before it (a version saved before markers
existed), marked staging folders whose writer is gone, and its own pointer temporaries.
Nothing is deleted through a symlink: version and staging entries that are symlinks are left
alone, and a target that is itself a symlink only loses versions inside it. Files of the
layout before versions (written directly into ``target/``) are left in place too.

**Concurrent writers** (processes or threads) write their staging folders in parallel and
commit one at a time under an exclusive ``fcntl.flock`` of ``target/.rag-multihop-write.lock``;
the last to commit is current and every save returns normally. A writer's staging marker is
flocked while it writes, so a later save can tell a live writer's folder from a dead one's.
The kernel drops a killed process's locks, so a killed writer never leaves a lock held.

**Readers** use :func:`read_artifact`, which holds a shared lock of
``target/.rag-multihop-read.lock`` while the caller reads the version it resolved; a save
deletes superseded versions only when it gets that lock exclusively (it waits at most half a
second for a gap between reads), and otherwise leaves them to the next save.
:func:`artifact_path` resolves the current version without locking (for callers that only
need the path). Folders saved before this layout (files directly in the folder) are read as
they are.

The locks need ``fcntl`` (Linux, macOS, other POSIX systems); without it saves still commit
atomically but are not serialised, and abandoned staging folders are kept.

API for a new kind of artifact: write its files inside ``with atomic_directory(target) as
staging:``; read them inside ``with read_artifact(target) as folder:``; describe it with
:func:`rag_multihop._artifact_config.write_config` / ``read_config`` (kind and format
version); raise :class:`ArtifactError` naming the file for anything corrupt.

Example:
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "model"
    >>> with atomic_directory(target) as staging:
    ...     _ = (staging / "config.json").write_text("{}")
    >>> with read_artifact(target) as folder:
    ...     sorted(p.name for p in folder.iterdir() if p.name != VERSION_MARKER)
    ['config.json']
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)


class ArtifactError(ValueError):
    """A saved artifact (index, graph, model, cache) is not what it claims to be; the
    message names the file and what is wrong. Raised when the artifact is loaded, never
    later at first use."""


def read_json_file(path: Path, what: str) -> Any:
    """The JSON value in ``path``, or :class:`ArtifactError` naming the file.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "config.json"
    >>> _ = bad.write_bytes(b"{not json")
    >>> read_json_file(bad, "index config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rag_multihop._atomic.ArtifactError: .../config.json is not a valid index config (not JSON: ...)
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path} is not a valid {what} (not JSON: {exc})") from None


POINTER = "CURRENT"
VERSION_MARKER = ".rag-multihop-version"
"""The file that marks a staging or version folder as written by :func:`atomic_directory`."""
WRITE_LOCK = ".rag-multihop-write.lock"
READ_LOCK = ".rag-multihop-read.lock"
_VERSION = re.compile(r"v-[0-9a-f]{32}")
_STAGING = re.compile(r"\.staging-[0-9a-f]{32}")
_POINTER_TEMP = re.compile(r"\.CURRENT\.tmp-[0-9a-f]{32}")
_READER_POLLS, _READER_POLL_SECONDS = 20, 0.025
_MARKER_TEXT = "a version folder written by rag_multihop._atomic.atomic_directory\n"


@contextmanager
def atomic_directory(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder whose contents become ``directory``'s current version.

    On success the new version becomes current atomically and superseded versions of this
    artifact are deleted (see the module docstring); on an exception the staging folder is
    removed and the old version stays current. Other entries of ``directory`` are kept.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    name = uuid.uuid4().hex
    staging = target / f".staging-{name}"
    marker: int | None = None
    created = False
    try:
        with _lock(target / WRITE_LOCK, exclusive=True):  # a cleanup never sees it unmarked
            (target / READ_LOCK).touch()
            staging.mkdir()  # unlike tempfile.mkdtemp (0700), this honours the umask
            created = True
            marker = _hold_marker(staging)
        yield staging
        _fsync_tree(staging)
        with _lock(target / WRITE_LOCK, exclusive=True):
            previous = _pointed_name(target)
            version = target / f"v-{name}"
            os.replace(staging, version)
            _write_pointer(target, version.name)
            _remove_superseded(target, keep=version.name, previous=previous)
    finally:
        if marker is not None:
            os.close(marker)
        if created and staging.is_dir() and not staging.is_symlink():
            shutil.rmtree(staging, ignore_errors=True)


def artifact_path(directory: str | os.PathLike[str]) -> Path:
    """The folder holding the current version of the artifact saved at ``directory``.

    Follows ``CURRENT``; a folder without one (saved before versioned folders, or not saved
    by this package) is returned as it is. A pointer naming a missing version raises
    :class:`ArtifactError`; staging folders left by a killed writer are named in a warning.
    Use :func:`read_artifact` to read the files: a later save may delete this version.
    """
    target = Path(directory)
    if not target.is_dir():
        return target
    abandoned = sorted(
        p.name for p in target.iterdir() if _STAGING.fullmatch(p.name) and _abandoned(p)
    )
    if abandoned:
        logger.warning(
            "%s holds leftovers of an interrupted save (%s); they are ignored and the next save "
            "removes them",
            target,
            ", ".join(abandoned[:3]),
        )
    pointer = target / POINTER
    if not pointer.is_file():
        return target
    version = pointer.read_text(encoding="utf-8").strip()
    current = target / version
    if not _VERSION.fullmatch(version) or not current.is_dir():
        raise ArtifactError(f"{pointer} names {version!r}, which is not a saved version here")
    return current


@contextmanager
def read_artifact(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """The current version's folder (:func:`artifact_path`), kept on disk while the block
    reads it: a concurrent save leaves it in place until the block ends.

    Loaders should read every file of the artifact inside one block.
    """
    target = Path(directory)
    if not (target / POINTER).is_file() and not (target / READ_LOCK).is_file():
        yield artifact_path(target)  # not a versioned artifact: nothing deletes it
        return
    with _lock(target / READ_LOCK, exclusive=False):
        yield artifact_path(target)


@contextmanager
def _lock(path: Path, *, exclusive: bool) -> Iterator[None]:
    """``flock`` of ``path`` (created if needed) for the block; released by the kernel if
    the process dies. Without ``fcntl``, or for a reader of a read-only folder without the
    lock file, the block runs unlocked."""
    descriptor = _open_lock(path, exclusive=exclusive)
    if descriptor is None:
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _open_lock(path: Path, *, exclusive: bool) -> int | None:
    if fcntl is None:
        return None
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        if exclusive:
            raise
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _try_lock(path: Path) -> int | None:
    """A descriptor of ``path`` holding an exclusive lock taken without waiting, or ``None``
    when another process (or another open of it) holds one, or it cannot be opened."""
    if fcntl is None:
        return None
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def _hold_marker(staging: Path) -> int:
    """Write the marker into ``staging`` and keep it locked (the writer is alive while the
    lock is held); its descriptor, to close when the save ends."""
    descriptor = os.open(staging / VERSION_MARKER, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(descriptor, _MARKER_TEXT.encode())
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _marked(folder: Path) -> bool:
    """Whether ``folder`` is a real folder that holds our marker (a regular file)."""
    marker = folder / VERSION_MARKER
    return (
        folder.is_dir() and not folder.is_symlink() and marker.is_file() and not marker.is_symlink()
    )


def holds_only_leftovers(target: Path) -> bool:
    """Whether every entry of ``target`` is what a save killed before its first commit
    leaves (the lock files, marked staging folders, pointer temporaries): such a folder is
    empty to a new save, not somebody else's."""
    for path in target.iterdir():
        name = path.name
        if name in (WRITE_LOCK, READ_LOCK) and path.is_file():
            continue
        if _POINTER_TEMP.fullmatch(name) and path.is_file() and not path.is_symlink():
            continue
        if _STAGING.fullmatch(name) and _marked(path):
            continue
        return False
    return True


def _abandoned(staging: Path) -> bool:
    """Whether ``staging`` is a marked staging folder whose writer is gone (no lock held)."""
    if not _marked(staging):
        return False
    descriptor = _try_lock(staging / VERSION_MARKER)
    if descriptor is None:
        return False
    os.close(descriptor)
    return True


def _pointed_name(target: Path) -> str | None:
    pointer = target / POINTER
    if not pointer.is_file():
        return None
    with suppress(OSError, UnicodeDecodeError):
        return pointer.read_text(encoding="utf-8").strip()
    return None


def _write_pointer(target: Path, version: str) -> None:
    temporary = target / f".CURRENT.tmp-{uuid.uuid4().hex}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(version)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target / POINTER)
    _fsync_directory(target)


def _remove_superseded(target: Path, *, keep: str, previous: str | None) -> None:
    """Delete this artifact's versions other than ``keep``, abandoned staging folders and
    pointer temporaries; called under the writers' lock, after ``CURRENT`` names ``keep``.
    Skipped when readers hold the read lock for half a second (the next save does it)."""
    readers = _try_lock(target / READ_LOCK)
    for _ in range(_READER_POLLS):  # readers load for a moment: wait a little for a gap
        if readers is not None or fcntl is None:
            break
        time.sleep(_READER_POLL_SECONDS)
        readers = _try_lock(target / READ_LOCK)
    if fcntl is not None and readers is None:
        logger.debug("%s is being read; superseded versions stay until the next save", target)
        return
    try:
        for path in target.iterdir():
            name = path.name
            if name == keep:
                continue
            if _VERSION.fullmatch(name):
                if _marked(path) or (name == previous and path.is_dir() and not path.is_symlink()):
                    shutil.rmtree(path, ignore_errors=True)
            elif _STAGING.fullmatch(name):
                if _abandoned(path):
                    shutil.rmtree(path, ignore_errors=True)
            elif _POINTER_TEMP.fullmatch(name) and path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
    finally:
        if readers is not None:
            os.close(readers)


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_directory(folder)


def _fsync_directory(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:  # platforms without directory descriptors
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
