"""Atomic replacement of whole saved folders (indexes, graphs, models), and safe loading.

**The guarantee**: a reader always finds either the complete old artifact or the complete
new one, across an exception and across the writer being killed (SIGKILL, power loss) at
any point. A saved artifact ``target/`` holds version folders ``v-<id>/`` and a pointer file
``CURRENT`` naming the complete one. A save writes a staging folder inside ``target/``,
renames it to a new version (atomic), then atomically replaces ``CURRENT`` (write a temporary
file, fsync, ``os.replace``); only then are older versions and leftovers deleted. A crash
before the pointer moves leaves the old version current; a crash after leaves the new one.
Loaders call :func:`artifact_path`, which follows the pointer (and reads folders saved before
this layout directly), and names leftover temporaries from a crash in a warning; the next
save removes them.

Example:
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "model"
    >>> with atomic_directory(target) as staging:
    ...     _ = (staging / "config.json").write_text("{}")
    >>> sorted(p.name for p in artifact_path(target).iterdir())
    ['config.json']
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
_VERSION_PREFIX = "v-"
_STAGING_PREFIX = ".staging-"
_POINTER_TEMP_PREFIX = ".CURRENT.tmp-"


@contextmanager
def atomic_directory(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder whose contents become ``directory``'s current version.

    On success the new version becomes current atomically (see the module docstring); on an
    exception the staging folder is removed and the old version stays current.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    name = uuid.uuid4().hex
    staging = target / f"{_STAGING_PREFIX}{name}"
    staging.mkdir()  # unlike tempfile.mkdtemp (0700), this honours the umask
    try:
        yield staging
        _fsync_tree(staging)
        version = target / f"{_VERSION_PREFIX}{name}"
        os.replace(staging, version)
        _write_pointer(target, version.name)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    _remove_stale(target, keep=version.name)


def artifact_path(directory: str | os.PathLike[str]) -> Path:
    """The folder holding the current version of the artifact saved at ``directory``.

    Follows ``CURRENT``; a folder without one (saved before versioned folders, or not saved
    by this package) is returned as it is. A pointer naming a missing version raises
    :class:`ArtifactError`; leftovers of an interrupted save are named in a warning.
    """
    target = Path(directory)
    pointer = target / POINTER
    leftovers = sorted(
        p.name
        for p in (target.iterdir() if target.is_dir() else ())
        if p.name.startswith((_STAGING_PREFIX, _POINTER_TEMP_PREFIX))
    )
    if leftovers:
        logger.warning(
            "%s holds leftovers of an interrupted save (%s); they are ignored and the next save "
            "removes them",
            target,
            ", ".join(leftovers[:3]),
        )
    if not pointer.is_file():
        return target
    version = pointer.read_text(encoding="utf-8").strip()
    current = target / version
    if not version.startswith(_VERSION_PREFIX) or "/" in version or not current.is_dir():
        raise ArtifactError(f"{pointer} names {version!r}, which is not a saved version here")
    return current


def _write_pointer(target: Path, version: str) -> None:
    temporary = target / f"{_POINTER_TEMP_PREFIX}{uuid.uuid4().hex}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(version)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target / POINTER)
    _fsync_directory(target)


def _remove_stale(target: Path, *, keep: str) -> None:
    """Delete older versions, leftovers of crashed saves and files of the pre-versioned
    layout; only called after ``CURRENT`` names ``keep``. Staging folders younger than an
    hour may belong to a concurrent save and are left alone."""
    for path in target.iterdir():
        if path.name in (keep, POINTER):
            continue
        if path.name.startswith(_STAGING_PREFIX) and time.time() - path.stat().st_mtime < 3600:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
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
