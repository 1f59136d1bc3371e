"""Sidecars: per-passage arrays a model derives from the corpus, stored beside the segments.

A sidecar holds what one method precomputes per passage with a model the index does not
own: AAR's passage transforms ``f(p)`` (:mod:`rag_multihop.association.indexed`) and
RaLa's token states (:mod:`rag_multihop.coop.indexed`). On disk, under ``sidecars/``::

    sidecars/h-aar-000004-<hex>/   the head: arrays written once (model weights, a codec)
    sidecars/p-aar-000004-<hex>/   a part: ``rows.npy`` (global rows, ascending) + arrays

The manifest's ``"sidecars"`` maps a kind to its ``identity`` (what made it: model digest,
encoder fingerprint, settings; compared with a writer's or reader's), its ``layout`` (how
each part array is laid out, so the store can gather rows without knowing the kind), its
head and its parts. A write adds one part for its new rows (computed by the producer the
writer was given, or, for a kind that computes from its head alone, by the index itself);
deletes need nothing (readers look up live rows only); a compaction gathers the live rows'
values into one part, renumbered, without recomputing.

Layouts: ``"row"`` (axis 0 is the part's rows) or ``[offsets array, axis]`` (ragged: row
``i`` owns ``[offsets[i], offsets[i+1])`` along ``axis``; the offsets array is rebuilt when
rows are gathered).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag_multihop._atomic import ArtifactError
from rag_multihop.store.segment import TEMP_PREFIX, describe_array, fsync_directory
from rag_multihop.store.segment import _load_array as load_array
from rag_multihop.store.tables import unpack_string
from rag_multihop.store.texts import text_at
from rag_multihop.types import Passage

logger = logging.getLogger(__name__)

SIDECARS = "sidecars"
ROWS = "rows"
Arrays = dict[str, np.ndarray]
Layout = Mapping[str, Any]


class SidecarProducer(Protocol):
    """Computes one kind of sidecar for passages (see the module docstring)."""

    @property
    def kind(self) -> str:
        """The sidecar's name in the manifest (``"aar"``, ``"rala"``)."""
        ...

    def identity(self) -> dict[str, Any]:
        """JSON-ready description of what makes the values (compared on every write/read)."""
        ...

    def layout(self) -> dict[str, Any]:
        """Each part array's layout (``"row"`` or ``[offsets name, axis]``)."""
        ...

    def start(self, passages: Sequence[Passage], vectors: np.ndarray) -> tuple[Arrays, Arrays]:
        """The head and the first part's arrays for ``passages`` (unit ``vectors``)."""
        ...

    def compute(
        self, head: Mapping[str, np.ndarray], passages: Sequence[Passage], vectors: np.ndarray
    ) -> Arrays:
        """A part's arrays for ``passages`` given the stored ``head``."""
        ...


@dataclass(frozen=True)
class Sidecar:
    """A sidecar of one version, memory-mapped: identity, head arrays and parts."""

    kind: str
    identity: Mapping[str, Any]
    layout: Layout
    head: Mapping[str, np.ndarray]
    parts: tuple[Mapping[str, np.ndarray], ...]

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per global row, the part holding it (``-1``: none) and its place in that part."""
        rows = np.asarray(rows, dtype=np.int64)
        part = np.full(rows.shape, -1, dtype=np.int64)
        local = np.full(rows.shape, -1, dtype=np.int64)
        for i, arrays in enumerate(self.parts):
            stored = np.asarray(arrays[ROWS])
            if not len(stored):
                continue
            where = np.minimum(np.searchsorted(stored, rows), len(stored) - 1)
            hit = stored[where] == rows
            part[hit], local[hit] = i, where[hit]
        return part, local

    def covered(self, rows: np.ndarray) -> np.ndarray:
        """Whether each global row has a value."""
        return self.locate(rows)[0] >= 0

    def take(self, name: str, part: int, local: int) -> np.ndarray:
        """Row ``local`` of part ``part``'s array ``name`` (a ragged array's slice)."""
        arrays = self.parts[part]
        spec = self.layout[name]
        if spec == "row":
            return np.asarray(arrays[name][local])
        offsets, axis = arrays[spec[0]], int(spec[1])
        piece = slice(int(offsets[local]), int(offsets[local + 1]))
        return np.asarray(arrays[name][(slice(None),) * axis + (piece,)])


def read_sidecars(root: Path, manifest: Mapping[str, Any]) -> dict[str, Sidecar]:
    """Every sidecar a manifest names, memory-mapped (``ArtifactError`` names a bad file)."""
    out = {}
    for kind, entry in (manifest.get("sidecars") or {}).items():
        out[kind] = Sidecar(
            kind,
            entry["identity"],
            entry["layout"],
            _read_folder(root, entry["head"]),
            tuple(_read_folder(root, part) for part in entry["parts"]),
        )
    return out


def read_sidecar(root: Path, manifest: Mapping[str, Any], kind: str) -> Sidecar:
    """The ``kind`` sidecar of a version; ``LookupError`` says how to attach one."""
    entry = (manifest.get("sidecars") or {}).get(kind)
    if entry is None:
        raise no_sidecar(root, manifest, kind)
    return read_sidecars(root, {"sidecars": {kind: entry}})[kind]


def no_sidecar(root: Path, manifest: Mapping[str, Any], kind: str) -> LookupError:
    """The error for a version without a ``kind`` sidecar (it says how to attach one)."""
    return LookupError(
        f"the index at {root} (version {manifest.get('version')}) holds no {kind!r} "
        f"sidecar (it holds {sorted(manifest.get('sidecars') or {}) or 'none'}); attach "
        "one with CorpusIndex.attach_sidecar(...)"
    )


def _read_folder(root: Path, entry: Mapping[str, Any]) -> Arrays:
    folder = root / SIDECARS / entry["name"]
    if not folder.is_dir():
        raise ArtifactError(f"sidecar folder {folder} named by the manifest is missing")
    return {key: load_array(folder / f"{key}.npy", spec) for key, spec in entry["files"].items()}


def write_folder(root: Path, prefix: str, version: int, arrays: Mapping[str, np.ndarray]) -> dict:
    """Write ``arrays`` as a new folder under ``sidecars/`` (staged, fsync'ed, renamed);
    its manifest entry."""
    parent = root / SIDECARS
    parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    staging = parent / f"{TEMP_PREFIX}{token}"
    staging.mkdir()
    files = {}
    for key, value in arrays.items():
        value = np.ascontiguousarray(value)
        with open(staging / f"{key}.npy", "wb") as handle:
            np.save(handle, value, allow_pickle=False)
            handle.flush()
            os.fsync(handle.fileno())
        files[key] = describe_array(value)
    fsync_directory(staging)
    name = f"{prefix}-{version:06d}-{token}"
    os.rename(staging, parent / name)
    fsync_directory(parent)
    return {"name": name, "files": files}


def gather(sidecar: Sidecar, rows: np.ndarray) -> tuple[np.ndarray, Arrays]:
    """The values of the global ``rows`` a sidecar covers, laid end to end in ``rows``'
    order: the indexes into ``rows`` that are covered, and the part arrays (no ``rows``)."""
    part, local = sidecar.locate(rows)
    covered = np.flatnonzero(part >= 0)
    ragged = {spec[0]: int(spec[1]) for spec in sidecar.layout.values() if spec != "row"}
    pieces: dict[str, list[np.ndarray]] = {name: [] for name in sidecar.layout}
    lengths: dict[str, list[np.ndarray]] = {name: [] for name in ragged}
    owners = part[covered]
    breaks = np.flatnonzero(np.diff(owners)) + 1  # runs of rows held by one part
    for run in np.split(np.arange(len(covered)), breaks):
        if not len(run):
            continue
        arrays = sidecar.parts[int(owners[run[0]])]
        chosen = local[covered[run]]
        for name in ragged:
            offsets = np.asarray(arrays[name])
            lengths[name].append(offsets[chosen + 1] - offsets[chosen])
        for name, spec in sidecar.layout.items():
            array = np.asarray(arrays[name])
            if spec == "row":
                pieces[name].append(array[chosen])
                continue
            offsets = np.asarray(arrays[spec[0]])
            spans = [np.arange(offsets[i], offsets[i + 1]) for i in chosen.tolist()]
            pieces[name].append(np.take(array, np.concatenate(spans), axis=int(spec[1])))
    out: Arrays = {}
    for name, spec in sidecar.layout.items():
        if pieces[name]:
            out[name] = np.concatenate(pieces[name], axis=0 if spec == "row" else int(spec[1]))
    for name, found in lengths.items():
        counts = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        out[name] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return covered, out


def passages_of(arrays: Mapping[str, np.ndarray]) -> list[Passage]:
    """The passages a segment's arrays hold (decoded from its string columns)."""
    n = len(arrays["ids.off"]) - 1

    def column(name: str) -> list[str]:
        return [unpack_string(arrays[f"{name}.blob"], arrays[f"{name}.off"], i) for i in range(n)]

    ids, titles = column("ids"), column("titles")
    texts = [text_at(arrays, i) for i in range(n)]
    return [Passage(i, x, t) for i, x, t in zip(ids, texts, titles, strict=True)]


def new_entry(producer: SidecarProducer, head: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest entry for a freshly attached sidecar (no parts yet)."""
    return {
        "identity": producer.identity(),
        "layout": producer.layout(),
        "head": head,
        "parts": [],
    }


def check_identity(producer: SidecarProducer, entry: Mapping[str, Any], root: Path) -> None:
    """``ValueError`` unless ``producer`` makes the values the stored sidecar holds."""
    mine, stored = producer.identity(), dict(entry["identity"])
    if mine != stored:
        differ = sorted(k for k in set(mine) | set(stored) if mine.get(k) != stored.get(k))
        raise ValueError(
            f"the {producer.kind!r} sidecar of the index at {root} was made by "
            f"{_describe(stored, differ)}, not by this writer's {_describe(mine, differ)}; "
            f"pass the producer that made it, or recompute it with "
            f"CorpusIndex.attach_sidecar(producer, replace=True)"
        )


def _describe(identity: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={identity.get(k)!r}" for k in keys)


AutoProducer = Callable[[Sidecar], "SidecarProducer | None"]


def commit_sidecars(
    root: Path,
    version: int,
    entries: Mapping[str, Any],
    producers: Mapping[str, SidecarProducer],
    segment: Mapping[str, np.ndarray],
    first_row: int,
    carried: np.ndarray | None,
    auto: Mapping[str, AutoProducer],
) -> dict[str, Any]:
    """The manifest's sidecars after a write whose segment adds rows from ``first_row``.

    ``carried`` (a compaction, or a write merging the segments from ``first_row`` on): the
    old global rows the segment's first rows are, in order; their values are gathered into
    one part, renumbered, and every part's values of rows from ``first_row`` on are dropped
    (those rows are renumbered). The segment's other rows get a part from
    ``producers[kind]`` (or ``auto[kind]``, which computes from the stored head); a sidecar
    with neither leaves them uncovered (readers compute or encode them on demand;
    ``attach_sidecar`` fills them in), with a warning.
    """
    out: dict[str, Any] = {}
    n = len(segment["ids.off"]) - 1
    kept = 0 if carried is None else len(carried)
    passages: list[Passage] | None = None
    for kind, entry in entries.items():
        sidecar = read_sidecar(root, {"sidecars": entries}, kind)
        parts = list(entry["parts"])
        if carried is not None:
            parts = _parts_renumbered(root, kind, version, sidecar, parts, first_row, carried)
        out[kind] = {**entry, "parts": parts}
        if n == kept:
            continue
        producer = producers.get(kind) or (auto[kind](sidecar) if kind in auto else None)
        if producer is None:
            logger.warning(
                "the index at %s has a %r sidecar but this writer has no producer for it: "
                "its %d new passages are left without values (computed at query time; "
                "attach_sidecar fills them in)",
                root,
                kind,
                n - kept,
            )
            continue
        check_identity(producer, entry, root)
        if passages is None:
            passages = passages_of(segment)[kept:]
        vectors = np.asarray(segment["vectors"])[kept:]
        arrays = producer.compute(sidecar.head, passages, vectors)
        arrays[ROWS] = np.arange(first_row + kept, first_row + n, dtype=np.int64)
        parts.append(write_folder(root, f"p-{kind}", version, arrays))
    return out


def _parts_renumbered(
    root: Path,
    kind: str,
    version: int,
    sidecar: Sidecar,
    parts: list[dict[str, Any]],
    first_row: int,
    carried: np.ndarray,
) -> list[dict[str, Any]]:
    """The parts of ``sidecar`` once the rows from ``first_row`` on are the ``carried``
    old rows renumbered from ``first_row``: parts below ``first_row`` kept as they are, the
    values below it of the parts reaching past it gathered into one part, the carried
    rows' values into another."""
    below: list[dict[str, Any]] = []
    straddling: list[np.ndarray] = []
    for part, arrays in zip(parts, sidecar.parts, strict=True):
        rows = np.asarray(arrays[ROWS])
        if not len(rows) or rows[-1] < first_row:
            below.append(part)
        else:
            straddling.append(rows[rows < first_row])
    old = np.sort(np.concatenate(straddling)) if straddling else np.zeros(0, np.int64)
    carried = np.asarray(carried, dtype=np.int64)
    for rows, numbers in ((old, old), (carried, first_row + np.arange(len(carried)))):
        covered, arrays = gather(sidecar, rows)
        if len(covered):
            arrays[ROWS] = numbers[covered].astype(np.int64)
            below.append(write_folder(root, f"p-{kind}", version, arrays))
    return below


def remove_unreferenced_sidecars(root: Path, manifest: Mapping[str, Any]) -> list[str]:
    """Delete the sidecar folders the current version does not name (after a compaction)
    and staging leftovers; the names removed."""
    parent = root / SIDECARS
    if not parent.is_dir():
        return []
    keep = set()
    for entry in (manifest.get("sidecars") or {}).values():
        keep.add(entry["head"]["name"])
        keep.update(part["name"] for part in entry["parts"])
    removed = []
    for path in parent.iterdir():
        ours = path.name.startswith(("h-", "p-", TEMP_PREFIX))
        if path.is_dir() and ours and path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def remove_staging(root: Path) -> None:
    """Delete a killed writer's staging folders under ``sidecars/`` (the lock is held)."""
    parent = root / SIDECARS
    for path in parent.iterdir() if parent.is_dir() else ():
        if path.name.startswith(TEMP_PREFIX) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _aar_from_head(sidecar: Sidecar) -> SidecarProducer:
    from rag_multihop.association.indexed import AssociationSidecar

    return AssociationSidecar.from_sidecar(sidecar)


AUTO_PRODUCERS: Mapping[str, AutoProducer] = {"aar": _aar_from_head}
"""Kinds whose head holds everything their values need: a write computes them itself."""


def sidecar_summary(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Per sidecar, its identity, parts and the rows they hold (for ``index info``)."""
    return {
        kind: {
            "identity": entry["identity"],
            "parts": len(entry["parts"]),
            "rows": sum(int(part["files"][ROWS]["shape"][0]) for part in entry["parts"]),
        }
        for kind, entry in (manifest.get("sidecars") or {}).items()
    }
