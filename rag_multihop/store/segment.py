"""Segments on disk: immutable folders of ``.npy`` arrays, the version manifests that list
them, the ``CURRENT`` pointer, and the writer lock.

Layout of an index folder (see ``docs/index.md``)::

    CURRENT                      the current manifest's file name (replaced atomically)
    LOCK                         flock()ed by the one writer (the kernel releases it on death)
    manifests/v-000007.json      format, settings, encoder fingerprint, segment list
    segments/s-000007-<hex>/     its arrays, written once, never modified: one .npy per
                                 array streamed by a build, the others packed in arrays.bin
    segments/w-000007-<hex>/     the version's serving arrays (``rag_multihop.store.served``),
                                 packed in arrays.bin

A segment is written into ``segments/.rag-multihop-tmp-<hex>/``, every file fsync'ed, then
renamed; the manifest is written to a temporary file, fsync'ed and renamed; ``CURRENT`` is
replaced last (temporary file, fsync, ``os.replace``, directory fsync). A writer killed at
any point leaves the previous version current; its leftovers (``.rag-multihop-tmp-*``) are
removed by the next writer, which holds the lock, so they cannot belong to a live writer.
Nothing else is removed from the index folder, which may hold the user's own files.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import math
import mmap
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._atomic import ArtifactError, read_json_file
from rag_multihop.store.tables import Postings
from rag_multihop.store.texts import PLAIN as PLAIN_TEXTS
from rag_multihop.store.texts import compress_texts

ANN_FILE = "ann.faiss"
"""A segment's stored ANN index (when ``IndexSettings.ann`` is not ``"flat"``): a FAISS
index file, memory-mapped when read. An HNSW over flat vectors holds the segment's vectors
(``vectors`` is then a view of its storage, not a second copy)."""

PACK_FILE = "arrays.bin"
"""The arrays of a folder written whole (a write's segment, a version's serving arrays),
packed in one file, each at the offset its manifest entry records as ``"at"`` (a multiple
of :data:`PACK_ALIGN`): one file to write, sync, open and remove instead of one per array
(a small write made ~50 files and removed as many)."""
PACK_ALIGN = 64

POINTER = "CURRENT"
LOCK = "LOCK"
READ_LOCK = "READERS"
"""Readers hold a shared ``flock`` of it while they open a version (read ``CURRENT``, its
manifest, map its arrays); a writer removes superseded files only while it holds it
exclusively (:func:`no_reader_opening`), so that no reader loses the version it is opening."""
MANIFESTS = "manifests"
SEGMENTS = "segments"
TEMP_PREFIX = ".rag-multihop-tmp-"
"""Every temporary file or folder a writer makes starts so (only those are ever removed
as a killed writer's leftovers)."""
LEGACY_TEMP_PREFIX = ".tmp-"
"""The temporaries of older versions, removed only inside ``manifests/`` and ``segments/``
(the index's own folders), never from the index folder itself."""
SEGMENT_PREFIX = "s"
SERVING_PREFIX = "w"


class IndexLockedError(TimeoutError):
    """Another process holds the index's writer lock for longer than the timeout."""


@dataclass(frozen=True, eq=False)
class Segment:
    """One immutable segment: its arrays (memory maps once written) and where it sits.

    Attributes:
        name: the folder name under ``segments/``.
        rows: the global rows ``[start, end)`` of the passages it adds.
        entities: the global entity numbers ``[start, end)`` of the names it adds.
        arrays: array name → array (see :mod:`rag_multihop.store.derive` for the names).
        ann: the stored FAISS ANN index over its vectors (``None`` for ``ann="flat"``).
    """

    name: str
    rows: tuple[int, int]
    entities: tuple[int, int]
    arrays: Mapping[str, np.ndarray]
    ann: Any = None
    files: Mapping[str, Mapping[str, Any]] | None = None
    """How :func:`write_segment` stored each array (``"at"``: its place in the pack);
    ``None``: shapes and dtypes only."""

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def table(self, prefix: str) -> Postings:
        """The keyed postings stored as ``<prefix>.hash``, ``.ptr`` and ``.val``."""
        a = self.arrays
        return Postings(a[f"{prefix}.hash"], a[f"{prefix}.ptr"], a[f"{prefix}.val"])

    def describe(self) -> dict[str, Any]:
        """The manifest's entry: name, ranges, and each file's shape and dtype (``"file":
        "ann.faiss"`` for the vectors an ANN index holds)."""
        stored = self.files or describe_arrays(self.arrays)
        files = {key: dict(spec) for key, spec in sorted(stored.items())}
        if self.ann is not None:
            files["vectors"]["file"] = ANN_FILE if holds_vectors(self.ann) else None
        return {
            "name": self.name,
            "rows": list(self.rows),
            "entities": list(self.entities),
            "files": files,
        }


def describe_array(value: np.ndarray) -> dict[str, Any]:
    """An array's shape and dtype, as a manifest records them and a reader checks them."""
    return {"shape": list(value.shape), "dtype": value.dtype.str}


def describe_arrays(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """:func:`describe_array` of each array, by name."""
    return {key: describe_array(value) for key, value in sorted(arrays.items())}


def holds_vectors(ann: Any) -> bool:
    """Whether a FAISS index keeps the vectors themselves (an HNSW over a flat storage)."""
    import faiss  # deferred: importing FAISS costs ~0.3 s

    storage = getattr(ann, "storage", None)
    return storage is not None and isinstance(faiss.downcast_index(storage), faiss.IndexFlat)


def fsync_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


ARRAY_HEADER_BYTES = 256
"""The ``.npy`` header an :class:`ArrayFile` reserves (format 1.0, padded with spaces)."""


class ArrayFile:
    """A ``.npy`` file written row block by row block, its length unknown until
    :meth:`close` writes the header (so a build streams a column to disk instead of
    holding it). Rows written can be read back (:meth:`read`) with a plain file read: no
    memory map, so the pages stay out of the writer's resident memory.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "x.npy"
    >>> column = ArrayFile(path, np.int32)
    >>> column.append(np.arange(3)); column.append(np.arange(2))
    >>> column.read(2, 4).tolist(), column.close(), np.load(path).tolist()
    ([2, 0], (5,), [0, 1, 2, 0, 1])
    """

    def __init__(self, path: Path, dtype: Any, row_shape: tuple[int, ...] = ()) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(int(x) for x in row_shape)
        self.row_bytes = self.dtype.itemsize * int(np.prod(self.row_shape))
        self.rows = 0
        self._handle = open(path, "w+b")  # noqa: SIM115 - closed by close()
        self._handle.write(b"\0" * ARRAY_HEADER_BYTES)

    def append(self, values: Any) -> None:
        """Write ``values`` (rows of ``row_shape``) after the rows written so far."""
        block = np.ascontiguousarray(values, dtype=self.dtype)
        if block.shape[1:] != self.row_shape and block.size:
            raise ValueError(
                f"{self.path.name}: rows of shape {block.shape[1:]}, not {self.row_shape}"
            )
        if block.size:
            self._handle.write(block.reshape(-1).view(np.uint8).data)
            self.rows += block.size // max(int(np.prod(self.row_shape)), 1)

    def read(self, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` written so far (a copy)."""
        self._handle.flush()
        count = end - start
        data = os.pread(
            self._handle.fileno(),
            count * self.row_bytes,
            ARRAY_HEADER_BYTES + start * self.row_bytes,
        )
        return np.frombuffer(data, dtype=self.dtype).reshape(count, *self.row_shape)

    def close(self) -> tuple[int, ...]:
        """Write the header, fsync and close; the array's shape."""
        shape = (self.rows, *self.row_shape)
        text = f"{{'descr': '{self.dtype.str}', 'fortran_order': False, 'shape': {shape!r}, }}"
        padding = ARRAY_HEADER_BYTES - 10 - len(text) - 1
        if padding < 0:
            raise ValueError(f"{self.path.name}: header of {shape} does not fit")
        header = b"\x93NUMPY\x01\x00" + (ARRAY_HEADER_BYTES - 10).to_bytes(2, "little")
        self._handle.flush()
        os.pwrite(self._handle.fileno(), header + (text + " " * padding + "\n").encode(), 0)
        os.fsync(self._handle.fileno())
        self._handle.close()
        return shape


class StagedSegment:
    """A segment folder being written (``segments/.rag-multihop-tmp-<hex>/``): columns streamed into
    :class:`ArrayFile` s or saved whole, published by :func:`write_segment`. A writer killed
    meanwhile leaves only the staging folder, which the next writer removes."""

    def __init__(self, root: Path) -> None:
        folder = root / SEGMENTS
        folder.mkdir(parents=True, exist_ok=True)
        self.token = uuid.uuid4().hex[:12]
        self.folder = folder / f"{TEMP_PREFIX}{self.token}"
        self.folder.mkdir()
        self.files: dict[str, ArrayFile] = {}
        self.packed: dict[str, dict[str, Any]] = {}
        """The manifest specs of the arrays :meth:`pack_soon` wrote (with their ``"at"``)."""
        self._writer: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        self._pack: int | None = None
        self._pack_end = 0

    def column(self, key: str, dtype: Any, row_shape: tuple[int, ...] = ()) -> ArrayFile:
        """A new streamed array ``key``."""
        column = self.files[key] = ArrayFile(self.folder / f"{key}.npy", dtype, row_shape)
        return column

    def save(self, key: str, value: np.ndarray) -> np.ndarray:
        """Write array ``key`` whole; the file, memory-mapped (the caller can drop
        ``value``)."""
        value = np.ascontiguousarray(value)
        self._save_file(key, value)
        return _load_array(self.folder / f"{key}.npy", describe_array(value))

    def pack_soon(self, key: str, value: np.ndarray) -> None:
        """Write array ``key`` into the folder's :data:`PACK_FILE` on this folder's writer
        thread, so that the disk works while the caller computes the next one (the write
        releases the GIL); :meth:`finish` waits for them and syncs the file. The caller must
        not change ``value`` meanwhile."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="segment-writer")
        if self._pack is None:
            self._pack = os.open(self.folder / PACK_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        value = np.ascontiguousarray(value)
        at = -(-self._pack_end // PACK_ALIGN) * PACK_ALIGN
        self.packed[key] = {**describe_array(value), "at": at}
        self._pack_end = at + value.nbytes
        self._pending.append(self._writer.submit(_write_at, self._pack, value, at))

    def finish(self) -> None:
        """Wait for the arrays :meth:`pack_soon` queued and sync the pack; the first write's
        error, raised once all have stopped."""
        pending, self._pending = self._pending, []
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        for future in pending:
            future.result()
        if self._pack is not None:
            descriptor, self._pack = self._pack, None
            try:
                os.ftruncate(descriptor, self._pack_end)  # the last arrays may be empty
                os.fsync(descriptor)
            finally:
                os.close(descriptor)

    def _save_file(self, key: str, value: np.ndarray) -> None:
        with open(self.folder / f"{key}.npy", "wb") as handle:
            np.save(handle, value, allow_pickle=False)
            handle.flush()
            os.fsync(handle.fileno())

    def close_columns(self) -> dict[str, np.ndarray]:
        """Finish every streamed array; each as a read-only memory map (no page read)."""
        out = {}
        for key, column in self.files.items():
            shape = column.close()
            spec = {"shape": list(shape), "dtype": column.dtype.str}
            out[key] = _load_array(column.path, spec)
        self.files = {}
        return out

    def holds(self, key: str) -> bool:
        return (self.folder / f"{key}.npy").is_file()

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True, cancel_futures=True)
            self._writer, self._pending = None, []
        if self._pack is not None:
            os.close(self._pack)
            self._pack = None
        shutil.rmtree(self.folder, ignore_errors=True)


def _write_at(descriptor: int, value: np.ndarray, at: int) -> None:
    """Write ``value``'s bytes at offset ``at`` of the open file ``descriptor``."""
    data = memoryview(value.reshape(-1).view(np.uint8).data)
    while data:
        written = os.pwrite(descriptor, data, at)
        data, at = data[written:], at + written


def write_segment(
    root: Path,
    version: int,
    arrays: Mapping[str, np.ndarray],
    ann: Any = None,
    staged: StagedSegment | None = None,
    *,
    prefix: str = SEGMENT_PREFIX,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Write ``arrays`` (and ``ann``, a FAISS index over the vectors, as ``ann.faiss``; the
    vectors then only there when it holds them) as a new folder under ``root/segments``
    named ``<prefix>-<version>-<hex>`` (:data:`SERVING_PREFIX` for serving arrays); its
    name and how each array is stored (the manifest's ``"files"``). With ``staged``, the
    arrays already written there (streamed ``.npy`` files, packed ones) are kept as they
    are and that folder is published; the others are packed in :data:`PACK_FILE`. A
    segment's texts are stored deflated when large enough (:mod:`rag_multihop.store.texts`:
    the returned files list ``texts.z`` ... instead of ``texts.blob``)."""
    folder = root / SEGMENTS
    own = staged is None
    staged = staged or StagedSegment(root)
    staging = staged.folder
    token = staging.name[len(TEMP_PREFIX) :]
    in_ann = ann is not None and holds_vectors(ann)
    files: dict[str, dict[str, Any]] = {}
    try:
        if "texts.blob" in arrays:  # deflated when large enough (rag_multihop.store.texts)
            texts = compress_texts(arrays["texts.blob"], arrays["texts.off"])
            if "texts.blob" not in texts:
                for key in PLAIN_TEXTS:
                    (staging / f"{key}.npy").unlink(missing_ok=True)
                arrays = {k: v for k, v in arrays.items() if k not in PLAIN_TEXTS} | texts
        for key, value in arrays.items():
            if key in staged.packed:
                continue
            if (key == "vectors" and in_ann) or (staging / f"{key}.npy").is_file():
                files[key] = describe_array(value)
                continue
            staged.pack_soon(key, value)
        staged.finish()
        if in_ann:
            (staging / "vectors.npy").unlink(missing_ok=True)
        if ann is not None:
            import faiss

            faiss.write_index(ann, str(staging / ANN_FILE))
            with open(staging / ANN_FILE, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_directory(staging)
    except BaseException:
        if own:  # else the caller that staged it discards it
            staged.discard()
        raise
    name = f"{prefix}-{version:06d}-{token}"
    os.rename(staging, folder / name)
    fsync_directory(folder)
    return name, files | staged.packed


def release_freed_memory() -> None:
    """Hand the heap memory this process has freed back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). A build calls it between its passes and the ANN
    insertion: the passes' millions of small objects are gone by then, but the allocator
    keeps their pages, and the peak RSS is the ANN's on top of them."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc, or no C library to ask
        return
    trim(0)


def drop_pages(array: np.ndarray) -> None:
    """Tell the kernel that the memory-mapped pages of ``array`` (a file map) are no longer
    needed by this process (they leave its resident memory; reading them again faults them
    back in from the page cache). Nothing for an array in anonymous memory."""
    base: Any = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            base.madvise(mmap.MADV_DONTNEED)
            return
        base = getattr(base, "_mmap", None) or getattr(base, "base", None)


PAGE_BYTES = 4096
"""The stride :func:`touch_pages` reads at (the smallest page size of common systems)."""


def touch_pages(array: np.ndarray) -> int:
    """Read one byte of every page of ``array`` (C-contiguous), so that a memory-mapped
    array's pages are mapped into the process now rather than faulted in one by one by the
    reads that need them; returns the bytes covered. Reading is all it does: an array in
    anonymous memory is left as it was.

    >>> touch_pages(np.zeros((3, 4096), dtype=np.float32))
    49152
    """
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.size:
        int(flat.view(np.uint8)[::PAGE_BYTES].sum())
    return int(flat.nbytes)


SMALL_ARRAY_BYTES = 64 * 1024
"""Arrays this small are read into memory instead of mapped: each map holds an open file
descriptor while the snapshot lives (about 30 a segment), so an index written in many small
batches would exhaust the process's descriptors (1,024 by default on Linux, 256 on macOS)
after a few dozen writes; reading a small array costs less than mapping it."""


def _load_array(path: Path, expected: Mapping[str, Any]) -> np.ndarray:
    """Memory-map the ``.npy`` file ``path`` as the manifest describes it (read it, when it
    holds at most :data:`SMALL_ARRAY_BYTES`).

    The header is checked as text against the manifest's dtype and shape rather than
    parsed with ``np.load``: its parser (``ast``) is not thread-safe on Python 3.11 before
    3.11.8, and readers open snapshots while a writer thread works.
    """
    shape = tuple(int(x) for x in expected["shape"])
    dtype = np.dtype(expected["dtype"])
    try:
        # one open file for the header and the map: a writer that removes the file meanwhile
        # (a superseded version's serving arrays) cannot make the map fail after the check
        with open(path, "rb") as handle:
            start = handle.read(12)
            size = os.fstat(handle.fileno()).st_size
            if start[:6] != b"\x93NUMPY":
                raise ArtifactError(f"{path} is not a .npy array file")
            if start[6] == 1:
                offset = 10 + int.from_bytes(start[8:10], "little")
            else:
                offset = 12 + int.from_bytes(start[8:12], "little")
            handle.seek(0)
            header = handle.read(offset).decode("latin-1")
            _check_header(path, header, size, offset, shape, dtype)
            if int(np.prod(shape)) == 0:
                return np.empty(shape, dtype=dtype)
            nbytes = int(np.prod(shape)) * dtype.itemsize
            if nbytes <= SMALL_ARRAY_BYTES:
                handle.seek(offset)
                return np.frombuffer(handle.read(nbytes), dtype=dtype).reshape(shape)
            # a plain ndarray view of the map: np.memmap's hooks cost microseconds per slice
            mapped = np.memmap(handle, dtype=dtype, mode="r", offset=offset, shape=shape)
            return mapped.view(np.ndarray)
    except OSError as exc:
        raise ArtifactError(f"{path} is missing or unreadable: {exc.strerror or exc}") from None


def _check_header(
    path: Path, header: str, size: int, offset: int, shape: tuple[int, ...], dtype: np.dtype
) -> None:
    """``ArtifactError`` unless the ``.npy`` header describes ``shape`` and ``dtype`` and the
    file holds all of the data."""
    described = f"'descr': '{dtype.str}'" in header and f"'shape': {shape!r}" in header
    if not described or "'fortran_order': False" not in header:
        raise ArtifactError(
            f"{path} holds an array other than the manifest's {dtype.str} {list(shape)} "
            f"(header {header[10:].strip()!r}); the segment is corrupt"
        )
    if size < offset + int(np.prod(shape)) * dtype.itemsize:
        raise ArtifactError(f"{path} is truncated ({size} bytes); the segment is corrupt")


def _load_ann(path: Path, vectors: Mapping[str, Any]) -> tuple[Any, np.ndarray | None]:
    """The FAISS index ``path`` (its flat storage memory-mapped, not copied) and, when the
    manifest says it holds the vectors, a read-only view of them."""
    import faiss  # deferred: importing FAISS costs ~0.3 s

    shape = tuple(int(x) for x in vectors["shape"])
    try:
        ann = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError as exc:
        raise ArtifactError(f"{path} is missing or not a FAISS index: {exc}") from None
    if (ann.ntotal, ann.d) != shape:
        raise ArtifactError(
            f"{path} indexes {ann.ntotal} vectors of dimension {ann.d}, not the manifest's "
            f"{list(shape)}; the segment is corrupt"
        )
    if vectors.get("file") != ANN_FILE:
        return ann, None
    if not holds_vectors(ann):
        raise ArtifactError(f"{path} does not hold the segment's vectors; the segment is corrupt")
    hnsw: Any = ann
    storage: Any = faiss.downcast_index(hnsw.storage)
    address = int(storage.codes.data())
    return ann, np.asarray(_StorageView(ann, address, shape))


class _StorageView:
    """The float32 vectors a FAISS flat storage holds, for ``np.asarray`` (read-only; the
    array keeps this object, and so the index and its mapping, alive)."""

    def __init__(self, ann: Any, address: int, shape: tuple[int, ...]) -> None:
        self.ann = ann
        self.__array_interface__ = {
            "data": (address, True),
            "shape": shape,
            "typestr": "<f4",
            "version": 3,
        }


def read_arrays(folder: Path, files: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """The arrays of ``folder`` that ``files`` describes (``.npy`` files, or places in its
    :data:`PACK_FILE`), memory-mapped read-only, or read when small (each checked against
    its shape and dtype, or the pack's size)."""
    if not folder.is_dir():
        raise ArtifactError(f"folder {folder} named by the manifest is missing")
    packed = {key: spec for key, spec in files.items() if "at" in spec}
    out = {
        key: _load_array(folder / f"{key}.npy", spec)
        for key, spec in files.items()
        if key not in packed
    }
    return out | (_read_pack(folder / PACK_FILE, packed) if packed else {})


def _read_pack(path: Path, specs: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """The arrays ``specs`` place in the pack file ``path``: views of one read of it (at
    most :data:`SMALL_ARRAY_BYTES`) or of one memory map (one descriptor for them all)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= SMALL_ARRAY_BYTES:
                data: Any = handle.read()
            else:
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise ArtifactError(f"{path} is missing or unreadable: {exc.strerror or exc}") from None
    out = {}
    for key, spec in specs.items():
        shape = tuple(int(x) for x in spec["shape"])
        dtype, at = np.dtype(spec["dtype"]), int(spec["at"])
        count = math.prod(shape)
        if at < 0 or at + count * dtype.itemsize > size:
            raise ArtifactError(
                f"{path} is truncated or foreign: array {key!r} ({count} × {dtype}) at byte "
                f"{at} ends past its {size} bytes"
            )
        if not count:
            out[key] = np.empty(shape, dtype=dtype)
            continue
        out[key] = np.frombuffer(data, dtype=dtype, count=count, offset=at).reshape(shape)
    return out


def read_segment(root: Path, entry: Mapping[str, Any], *, ann: bool = True) -> Segment:
    """The segment a manifest entry describes, every array memory-mapped read-only; with
    ``ann=False`` its stored ANN index is not loaded, nor the vectors it holds (a writer
    that only appends a segment needs neither, and FAISS's import and read cost ~0.7 s
    at a million passages)."""
    name = entry["name"]
    folder = root / SEGMENTS / name
    if not folder.is_dir():
        raise ArtifactError(f"segment {folder} named by the manifest is missing")
    files = entry["files"]
    arrays = read_arrays(
        folder,
        {k: v for k, v in files.items() if not (k == "vectors" and v.get("file"))},
    )
    index = None
    if ann and "file" in files.get("vectors", {}):
        index, vectors = _load_ann(folder / ANN_FILE, files["vectors"])
        if vectors is not None:
            arrays["vectors"] = vectors
    rows, entities = entry["rows"], entry["entities"]
    return Segment(
        name, (int(rows[0]), int(rows[1])), (int(entities[0]), int(entities[1])), arrays, index
    )


MANIFEST_NAME = re.compile(r"v-\d{6,}\.json")
"""The names :func:`manifest_name` gives."""


def manifest_name(version: int) -> str:
    return f"v-{version:06d}.json"


def write_manifest(root: Path, manifest: Mapping[str, Any]) -> None:
    """Write the manifest of ``manifest["version"]`` and point ``CURRENT`` at it."""
    folder = root / MANIFESTS
    folder.mkdir(parents=True, exist_ok=True)
    name = manifest_name(int(manifest["version"]))
    _write_file(folder, name, json.dumps(manifest, ensure_ascii=False, indent=1))
    _write_file(root, POINTER, f"{MANIFESTS}/{name}\n")


def _write_file(folder: Path, name: str, text: str) -> None:
    temporary = folder / f"{TEMP_PREFIX}{uuid.uuid4().hex[:12]}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, folder / name)
    fsync_directory(folder)


def current_manifest_path(root: Path) -> Path:
    """The manifest ``CURRENT`` names; :class:`ArtifactError` when the folder is no index."""
    pointer = root / POINTER
    if not pointer.is_file():
        raise FileNotFoundError(f"{root} is not a CorpusIndex (no {POINTER} file)")
    try:
        relative = pointer.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise ArtifactError(f"{pointer} is not UTF-8 text; the index is corrupt") from None
    path = root / relative
    if not relative.startswith(f"{MANIFESTS}/v-") or ".." in relative or not path.is_file():
        raise ArtifactError(f"{pointer} names {relative!r}, which is not a manifest here")
    return path


def read_manifest(path: Path) -> dict[str, Any]:
    manifest = read_json_file(path, "CorpusIndex manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("segments"), list):
        raise ArtifactError(f"{path} is not a CorpusIndex manifest (no segment list)")
    return manifest


MANIFEST_FIELDS: Mapping[str, type] = {
    "version": int,
    "dim": int,
    "rows": int,
    "entities": int,
    "live": int,
    "settings": dict,
    "extractor": str,
}
"""The fields of a manifest that readers use, with their JSON types."""
SEGMENT_FIELDS: Mapping[str, type] = {"name": str, "rows": list, "entities": list, "files": dict}
"""The same for each of its segment entries."""


def check_manifest_fields(path: Path, manifest: Mapping[str, Any]) -> None:
    """:class:`ArtifactError` naming ``path`` and the fields of :data:`MANIFEST_FIELDS` and
    :data:`SEGMENT_FIELDS` that ``manifest`` lacks or holds with another type."""
    bad = _bad_fields(manifest, MANIFEST_FIELDS, "")
    for i, entry in enumerate(manifest["segments"]):
        bad += _bad_fields(entry, SEGMENT_FIELDS, f"segments[{i}].")
    if bad:
        raise ArtifactError(
            f"{path}: {', '.join(bad)} missing or of the wrong type; the manifest is corrupt"
        )


def _bad_fields(values: object, fields: Mapping[str, type], prefix: str) -> list[str]:
    if not isinstance(values, dict):
        return [prefix.rstrip(".")]
    return [
        f"{prefix}{key} ({kind.__name__})"
        for key, kind in fields.items()
        if not isinstance(values.get(key), kind) or isinstance(values.get(key), bool)
    ]


def check_lock_timeout(value: object) -> float:
    """``value`` as seconds to wait for the writer lock: a finite number ≥ 0, else
    ``ValueError``."""
    seconds = float(value) if isinstance(value, Real) and not isinstance(value, bool) else math.nan
    if not 0 <= seconds < math.inf:
        raise ValueError(f"lock_timeout must be a finite number of seconds >= 0, got {value!r}")
    return seconds


@contextmanager
def opening_version(root: Path) -> Iterator[None]:
    """Hold a shared lock of :data:`READ_LOCK` for the block (none where the file cannot be
    opened: a read-only copy of an index, which no writer changes)."""
    try:
        handle = open(root / READ_LOCK, "a+")  # noqa: SIM115 - held for the block
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_SH)
        yield
    finally:
        handle.close()  # closing releases the lock


@contextmanager
def no_reader_opening(root: Path, wait: float = 0.5) -> Iterator[bool]:
    """Whether the block holds :data:`READ_LOCK` exclusively: taken as soon as no reader is
    opening a version, waiting at most ``wait`` seconds (a writer then leaves superseded
    files for the next write to remove rather than wait for readers)."""
    handle = open(root / READ_LOCK, "a+")  # noqa: SIM115 - held for the block
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.01)
        yield True
    finally:
        handle.close()


@contextmanager
def writer_lock(root: Path, timeout: float) -> Iterator[None]:
    """Hold the exclusive writer lock (``flock`` on ``LOCK``) inside the block.

    The kernel drops an ``flock`` when its holder dies, so a killed writer never leaves the
    index locked. Waits up to ``timeout`` seconds (:func:`check_lock_timeout`), then raises
    :class:`IndexLockedError`.
    """
    handle = open(root / LOCK, "a+")  # noqa: SIM115 - held for the block
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise IndexLockedError(
                        f"another writer holds {root / LOCK} (waited {timeout:g} s); retry "
                        "later or raise lock_timeout"
                    ) from None
                time.sleep(0.05)
        _remove_leftovers(root)
        yield
    finally:
        handle.close()  # closing the descriptor releases the lock


def _remove_leftovers(root: Path) -> None:
    """Delete the temporary files and folders a killed writer left (:data:`TEMP_PREFIX`;
    also :data:`LEGACY_TEMP_PREFIX` inside the index's own subfolders). The lock is held,
    so no live writer owns them."""
    for folder, prefixes in (
        (root, (TEMP_PREFIX,)),
        (root / MANIFESTS, (TEMP_PREFIX, LEGACY_TEMP_PREFIX)),
        (root / SEGMENTS, (TEMP_PREFIX, LEGACY_TEMP_PREFIX)),
    ):
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.name.startswith(prefixes):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def remove_unreferenced(
    root: Path,
    keep_segments: set[str],
    keep_manifest: str | None,
    *,
    prefixes: tuple[str, ...] = (SEGMENT_PREFIX, SERVING_PREFIX),
) -> list[str]:
    """Delete the folders this index wrote under ``segments/`` (named
    ``<prefix>-<version>-<hex>`` for one of ``prefixes``) that are not in ``keep_segments``,
    and (unless ``keep_manifest`` is ``None``) the manifests (``v-<version>.json``) other
    than ``keep_manifest``; the names removed. A name the index does not write is left
    alone. Readers holding an older snapshot keep their memory maps (the files stay
    readable until unmapped)."""
    removed = []
    segments = root / SEGMENTS
    ours = re.compile(rf"(?:{'|'.join(map(re.escape, prefixes))})-\d{{6,}}-[0-9a-f]{{12}}")
    for path in segments.iterdir() if segments.is_dir() else ():
        if path.is_dir() and ours.fullmatch(path.name) and path.name not in keep_segments:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    if keep_manifest is None:
        return removed
    manifests = root / MANIFESTS
    for path in manifests.iterdir() if manifests.is_dir() else ():
        if MANIFEST_NAME.fullmatch(path.name) and path.name != keep_manifest:
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed
