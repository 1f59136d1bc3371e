"""Atomic writes of whole folders (saved indexes, graphs and models).

Example:
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "model"
    >>> with atomic_directory(target) as staging:
    ...     _ = (staging / "config.json").write_text("{}")
    >>> sorted(p.name for p in target.iterdir())
    ['config.json']
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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


@contextmanager
def atomic_directory(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder beside ``directory`` that replaces it on success.

    Readers see the old folder or the new one, never a half-written one; on an exception the
    staging folder is removed and ``directory`` is left as it was.
    """
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    retired = staging.with_name(staging.name + ".old")
    staging.mkdir()  # unlike tempfile.mkdtemp (0700), this honours the umask
    try:
        yield staging
        if target.exists():
            os.replace(target, retired)
        os.replace(staging, target)
    finally:
        for leftover in (staging, retired):
            if leftover.exists():
                shutil.rmtree(leftover)
