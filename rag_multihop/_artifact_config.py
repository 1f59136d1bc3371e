"""A saved artifact's JSON config, written and read with its kind and format version.

Every saved folder (dense index, entity graph, association model, RaLa store) describes
itself in one JSON file: ``kind`` (what it is), ``format_version`` (how its files are laid
out), ``rag_multihop_version`` (what wrote it) and the artifact's own fields.
:func:`write_config` writes it into a staging folder (:func:`~rag_multihop._atomic.
atomic_directory`); :func:`read_config` reads it back and refuses, with an error naming the
file, a missing file, a file that is not a JSON object, another kind or an unsupported
version. Configs written before kinds were recorded are accepted where the caller says so
(``kindless=True``).

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_config(folder, "rag_multihop.toy", 1, {"dim": 2})
    >>> read_config(folder, "rag_multihop.toy", (1,))["dim"]
    2
    >>> read_config(folder, "rag_multihop.toy", (2,), label="toy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rag_multihop._atomic.ArtifactError: .../config.json: unsupported toy format_version 1; ...
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from rag_multihop._atomic import ArtifactError, read_json_file
from rag_multihop._version import __version__

CONFIG_FILE = "config.json"
RESERVED = ("kind", "format_version", "rag_multihop_version")
"""The keys :func:`write_config` sets itself (a ``data`` value under one is replaced)."""


def write_config(
    folder: Path,
    kind: str,
    version: int,
    data: Mapping[str, Any],
    *,
    filename: str = CONFIG_FILE,
    indent: int | None = 2,
) -> None:
    """Write ``data`` with ``kind``, ``format_version`` and ``rag_multihop_version`` first
    into ``folder / filename`` (UTF-8 JSON; ``indent=None`` for large id lists)."""
    config = {"kind": kind, "format_version": version, "rag_multihop_version": __version__}
    config.update((key, value) for key, value in data.items() if key not in RESERVED)
    (folder / filename).write_text(
        json.dumps(config, indent=indent, ensure_ascii=False), encoding="utf-8"
    )


def read_config(
    folder: Path,
    kind: str,
    supported_versions: Collection[int],
    *,
    filename: str = CONFIG_FILE,
    label: str | None = None,
    kindless: bool = False,
    hint: str = "",
) -> dict[str, Any]:
    """The JSON object in ``folder / filename``, checked for ``kind`` and format version.

    Args:
        folder: the folder holding the artifact's files (the version folder of a saved one).
        kind: the ``kind`` the file must name.
        supported_versions: the ``format_version`` values this code reads.
        label: the artifact's name in messages (default: ``kind``).
        kindless: accept a file without ``kind`` (written before kinds were recorded).
        hint: appended to the message for a missing file (how to make one).

    Raises:
        FileNotFoundError: no such file (``folder`` is not a saved artifact).
        ArtifactError: not JSON, not an object, another kind or an unsupported version.
    """
    label = label or kind
    path = folder / filename
    if not path.is_file():
        raise FileNotFoundError(
            f"{folder} is not a saved {label} (no {filename}){'; ' + hint if hint else ''}"
        )
    config = read_json_file(path, f"{label} config")
    if not isinstance(config, dict):
        raise ArtifactError(
            f"{path} is not a valid {label} config: expected a JSON object, got "
            f"{type(config).__name__}"
        )
    found = config.get("kind")
    if found != kind and not (found is None and kindless):
        raise ArtifactError(f"{path} holds a {found!r} artifact, not a {kind!r} ({label}) one")
    version = config.get("format_version")
    if isinstance(version, bool) or version not in supported_versions:
        supported = ", ".join(str(v) for v in sorted(supported_versions))
        raise ArtifactError(
            f"{path}: unsupported {label} format_version {version!r}; this version of "
            f"rag-multihop reads format_version {supported}"
        )
    return config
