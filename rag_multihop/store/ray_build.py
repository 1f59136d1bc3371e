"""Building a :class:`~rag_multihop.store.CorpusIndex` with Ray, locally or on a cluster.

The engine maps the batch plan of :mod:`rag_multihop.store.batches` over shards, in parts
(:mod:`rag_multihop.store.parts`). One pool of worker actors serves both passes: each actor
reads the shards it is handed with pyarrow (JSON Lines or Parquet; local paths, globs or any
fsspec URL; columns ``id``, ``text``, ``title`` optional (null: none), ``vector``: without it
the actor embeds with ``encoder``, loaded once per actor) and runs pass 1 into numpy arrays.
The driver collects each unit's name-dictionary entries (a few arrays per passage) and
shares them through the object store; every actor builds the dictionary from them and runs
pass 2 over the units it read (their texts stay in the actor). The actors write each unit's
part to disk (a cluster's actors return it to the driver, which writes it), and the driver
merges the memory-mapped parts into the index's first segment through the store's own
writer, so the index equals :meth:`CorpusIndex.build <rag_multihop.store.CorpusIndex.build>`
of the same passages. No per-passage Python object crosses between processes.

Example (a local Ray with two workers; needs ``pip install 'rag-multihop[ray]'``)::

    from rag_multihop.store.ray_build import build_with_ray
    index = build_with_ray("my.idx", ["shards/*.parquet"], workers=2)

On a cluster, pass ``address="ray://head:10001"`` (or ``"auto"`` on a node of it); every
node needs rag-multihop installed and read access to the shards (see ``docs/scale.md``).
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._optional import require
from rag_multihop.encoders.base import Encoder
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.store import batches, parts
from rag_multihop.store.batches import LINK_STAGE, READ_STAGE, NameDictionary, Progress
from rag_multihop.store.index import CorpusIndex
from rag_multihop.store.segment import POINTER
from rag_multihop.store.settings import IndexSettings
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize

logger = logging.getLogger(__name__)

DRIVER_SWITCH_INTERVAL_S = 0.0002
"""The interpreter's thread switch interval while the driver's pass-1 thread works beside
the main thread (Python's default is 0.005 s). The main thread imports and starts Ray and
hands units to the actors; each time it waits (a socket, a child process) it must win the
GIL back from the busy pass-1 thread, which by default keeps it up to 5 ms. On the 2-core
project machine that stretched ``import ray`` + ``ray.init`` + two actors from 7 s to 37 s
beside a busy thread; at 0.2 ms they took 11 s."""

FORMATS = {".jsonl": "json", ".json": "json", ".jsonl.gz": "json", ".parquet": "parquet"}
"""Shard file endings and the reader each takes."""


def shard_format(path: str) -> str:
    """``"json"`` or ``"parquet"`` by the file's ending; ``ValueError`` for others."""
    for ending, kind in FORMATS.items():
        if path.endswith(ending):
            return kind
    raise ValueError(
        f"input {path!r} is neither JSON Lines nor Parquet; shards end in " + ", ".join(FORMATS)
    )


def expand_inputs(inputs: Sequence[str]) -> tuple[list[str], str, Any]:
    """The shard files ``inputs`` name (paths, folders, globs or fsspec URLs), sorted
    within each input, their format, and the pyarrow filesystem for URLs (``None`` for
    local files). ``FileNotFoundError`` names an input that matches nothing."""
    if isinstance(inputs, str) or not inputs:
        raise ValueError("inputs must be a non-empty list of shard paths, globs or URLs")
    files: list[str] = []
    filesystem = None
    for given in inputs:
        if "://" in given:
            fsspec = require("fsspec", "ray")
            fs, root = fsspec.core.url_to_fs(given)
            found = sorted(fs.glob(root)) if glob.has_magic(root) else [root]
            found = [
                f for path in found for f in (sorted(fs.find(path)) if fs.isdir(path) else [path])
            ]
            from pyarrow.fs import FSSpecHandler, PyFileSystem

            filesystem = PyFileSystem(FSSpecHandler(fs))
        else:
            path = os.path.expanduser(given)
            found = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
            found = [
                str(f)
                for match in found
                for f in (
                    sorted(p for p in Path(match).rglob("*") if p.is_file())
                    if Path(match).is_dir()
                    else [Path(match)]
                )
            ]
            missing = [f for f in found if not Path(f).is_file()]
            if missing:
                raise FileNotFoundError(f"input shard not found: {missing[0]}")
        if not found:
            raise FileNotFoundError(f"input {given!r} matches no shard file")
        files.extend(found)
    kinds = {shard_format(f) for f in files}
    if len(kinds) > 1:
        raise ValueError(f"inputs mix JSON Lines and Parquet shards ({sorted(kinds)}); use one")
    return files, kinds.pop(), filesystem


def _columns(table: Any, path: str) -> dict[str, list[Any]]:
    """The ``id``, ``text`` and ``title`` columns of shard ``path``'s table as lists, checked."""
    names = table.column_names
    for field in ("id", "text"):
        if field not in names:
            raise ValueError(
                f"input shards need a {field!r} column; shard {path} has {sorted(names)}"
            )
    out = {field: table.column(field).to_pylist() for field in ("id", "text")}
    titles = table.column("title").to_pylist() if "title" in names else [None] * table.num_rows
    out["title"] = ["" if title is None else title for title in titles]  # null: no title
    for field, values in out.items():
        for i, value in enumerate(values):
            if not isinstance(value, str) or (field != "title" and not value):
                raise ValueError(
                    f"input record {out['id'][i]!r}: field {field!r} must be a "
                    f"{'non-empty ' if field != 'title' else ''}string, got {value!r}"[:300]
                )
    return out


FOREGROUND = {"RAY_worker_niceness": "0"}
"""The environment a local Ray the build starts is started with: Ray runs worker processes
at niceness 15, which on a busy machine starves them behind every other process; a local
build is the foreground job, so its actors run at the driver's priority. Set while
``ray.init`` starts Ray's daemons (which pass it to the workers they start), not as each
actor's ``runtime_env``: that made Ray start fresh worker processes through its runtime-env
agent instead of the ones it prestarts (two actors ready in 2.7 s against 0.8 s)."""

UNITS_PER_WORKER = 4
"""Units of work per worker at least: files are cut into row slices when there are fewer."""


@dataclass(frozen=True)
class Unit:
    """A unit of work: slice ``piece`` of ``pieces`` near-equal row slices of one shard."""

    number: int
    path: str
    piece: int = 0
    pieces: int = 1


def plan_units(files: Sequence[str], workers: int) -> list[Unit]:
    """The units of ``files`` in input order: each file whole, or cut into row slices
    when there are fewer than :data:`UNITS_PER_WORKER` files per worker (each slice reads
    its whole file, cheap next to the passes for Parquet; give more JSON Lines shards).

    >>> [(u.path, u.piece, u.pieces) for u in plan_units(["a", "b"], 1)]
    [('a', 0, 2), ('a', 1, 2), ('b', 0, 2), ('b', 1, 2)]
    """
    pieces = -(-UNITS_PER_WORKER * workers // len(files))
    found = [(path, piece, pieces) for path in files for piece in range(pieces)]
    return [Unit(number, *where) for number, where in enumerate(found)]


def _local_filesystem() -> Any:
    from pyarrow.fs import LocalFileSystem

    return LocalFileSystem()


def read_unit(unit: Unit, kind: str, filesystem: Any) -> Any:
    """The Arrow table of ``unit`` (read with pyarrow, no Ray Data in between)."""
    fs = filesystem or _local_filesystem()
    if kind == "parquet":
        import pyarrow.parquet as pq

        with fs.open_input_file(unit.path) as handle:
            table = pq.read_table(handle)
    else:
        from pyarrow import json as pajson

        with fs.open_input_stream(unit.path, compression="detect") as handle:
            table = pajson.read_json(handle, read_options=pajson.ReadOptions(block_size=32 << 20))
    n = table.num_rows
    start, end = unit.piece * n // unit.pieces, (unit.piece + 1) * n // unit.pieces
    return table.slice(start, end - start)


class BuildWorker:
    """One Ray actor for both passes (the driver runs one too, while Ray starts): it reads
    its units' shards itself, runs pass 1 (:func:`~rag_multihop.store.parts.read_part`,
    embedding when the shards hold no vectors), keeps each unit's part (numpy arrays) until
    pass 2, builds the name dictionary once from every unit's entries, runs pass 2
    (:func:`~rag_multihop.store.parts.link_part`), and writes each unit's part as ``.npy``
    files under ``folder`` (or, when ``folder`` is ``None``, as on a cluster, returns it to
    the driver)."""

    def __init__(
        self,
        kind: str,
        filesystem: Any,
        settings: IndexSettings,
        extractor: EntityExtractor,
        encoder: str | None,
        batch_size: int,
        folder: str | None,
    ) -> None:
        self.arguments = (kind, filesystem, settings, extractor, encoder, batch_size)
        self.kind, self.filesystem = kind, filesystem
        self.settings, self.extractor, self.batch_size = settings, extractor, batch_size
        self.folder = folder
        self.encoder_name = encoder
        self._encoder: Encoder | None = None
        self.read_parts: dict[int, parts.Part] = {}
        self.dictionary: NameDictionary | None = None
        self.charged = 0.0

    @property
    def encoder(self) -> Encoder | None:
        """The encoder named at construction, made on first use (``None`` if none)."""
        if self._encoder is None and self.encoder_name is not None:
            from rag_multihop.encoders import make_encoder

            self._encoder = make_encoder(self.encoder_name)
        return self._encoder

    def _cpu(self) -> float:
        """This process's CPU seconds since the last call (the first: since it started,
        Ray's worker start-up and the imports included)."""
        now = time.process_time()
        spent, self.charged = now - self.charged, now
        return spent

    def read(self, unit: Unit) -> tuple[parts.Part, float]:
        """Pass 1 over ``unit``: its dictionary entries and the CPU seconds spent."""
        table = read_unit(unit, self.kind, self.filesystem)
        columns = _columns(table, unit.path)
        if "vector" in table.column_names:
            vectors = _matrix(table.column("vector"))
        elif self.encoder is not None:
            encoder = self.encoder
            texts = [p.embedding_text for p in batches.batch_passages(columns)]
            vectors = np.concatenate(
                [
                    np.asarray(encoder.encode(texts[i : i + self.batch_size]), np.float32)
                    for i in range(0, len(texts), self.batch_size)
                ]
                or [np.zeros((0, encoder.dim), np.float32)]
            )
        else:
            raise ValueError(
                f"shard {unit.path} has no 'vector' column; give one or name an encoder"
            )
        if len(vectors):
            vectors = l2_normalize(as_embedding_matrix(vectors, name="vectors"))
        part = parts.read_part(
            columns,
            vectors,
            subjects=self.settings.subjects,
            extractor=self.extractor,
            batch_size=self.batch_size,
        )
        self.read_parts[unit.number] = part
        return parts.entries(part), self._cpu()

    def link(
        self, number: int, first_row: int, entries: list[parts.Part]
    ) -> tuple[parts.Part | None, float]:
        """Pass 2 over unit ``number`` (first global row ``first_row``) against the
        dictionary of every unit's ``entries``: its whole part written to ``folder`` (and
        ``None`` returned) or returned; with the CPU seconds spent."""
        if self.dictionary is None:
            self.dictionary = parts.name_dictionary(entries, self.settings)
        part = self.read_parts.pop(number)
        part |= parts.link_part(part["texts.blob"], part["texts.off"], first_row, self.dictionary)
        if self.folder is not None:
            save_part(Path(self.folder), number, part)
            return None, self._cpu()
        return part, self._cpu()


def save_part(folder: Path, number: int, part: Mapping[str, np.ndarray]) -> None:
    """Write ``part`` as one ``.npy`` file per array under ``folder/<number>``."""
    target = folder / f"{number:06d}"
    target.mkdir(parents=True, exist_ok=True)
    for name, array in part.items():
        np.save(target / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def load_part(folder: Path, number: int) -> dict[str, np.ndarray]:
    """The arrays :func:`save_part` wrote, memory-mapped."""
    return {
        path.name[: -len(".npy")]: np.load(path, mmap_mode="r", allow_pickle=False)
        for path in sorted((folder / f"{number:06d}").glob("*.npy"))
    }


def _on_this_machine(ray: Any) -> bool:
    """Whether every node of the running Ray is this machine (workers can write here)."""
    here = ray.util.get_node_ip_address()
    return all(node["NodeManagerAddress"] == here for node in ray.nodes() if node["Alive"])


def _object_store_bytes(files: Sequence[str], filesystem: Any) -> int:
    """A local Ray's object store for a build: the shards' size (what crosses it is a
    fraction of that), between 128 MB and 2 GB."""
    if filesystem is not None:
        return 512 << 20
    size = sum(os.path.getsize(f) for f in files)
    return int(min(max(size, 128 << 20), 2 << 30))


def build_with_ray(
    path: str | os.PathLike[str],
    inputs: Sequence[str],
    *,
    settings: IndexSettings | None = None,
    extractor: EntityExtractor | None = None,
    encoder: str | None = None,
    address: str | None = None,
    workers: int = 2,
    batch_size: int = batches.DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
    init_options: dict[str, Any] | None = None,
    timings: list[dict[str, Any]] | None = None,
) -> CorpusIndex:
    """Build the index at ``path`` from the shards ``inputs`` with Ray.

    While Ray starts (or connects), the driver runs pass 1 over the first units itself;
    the actors take the rest, and each process links the units it read.

    Args:
        path: the new index folder (an error if it holds an index).
        inputs: shard paths, folders, globs or fsspec URLs, one format (JSON Lines or
            Parquet), read in the order given (files sorted within each input).
        settings: the index settings (:class:`IndexSettings` defaults).
        extractor: the entity extractor (:class:`HeuristicExtractor` by default).
        encoder: an encoder name (:data:`~rag_multihop.encoders.registry.ENCODERS`) for
            shards without a ``vector`` column; its fingerprint goes into the manifest.
        address: a Ray cluster's address; ``None`` starts a local Ray with ``workers`` CPUs
            (and stops it when done); a Ray already initialised is used as it is.
        workers: worker actors (one CPU each), used by both passes.
        batch_size: passages per call of the batch functions (and of the encoder).
        progress: called as ``progress(stage, done, total)`` (``total`` 0 while unknown),
            from the driver's threads.
        init_options: more keyword arguments for ``ray.init`` (e.g. ``object_store_memory``).
        timings: a list to append one record per phase to: ``phase``, ``wall_s``,
            ``driver_cpu_s`` and ``workers_cpu_s`` (the actors' CPU seconds in that phase).
    """
    workers = check_positive_int(workers, "workers")
    batch_size = check_positive_int(batch_size, "batch_size")
    settings = settings or IndexSettings()
    extractor = extractor or HeuristicExtractor()
    files, kind, filesystem = expand_inputs(inputs)
    if (Path(path) / POINTER).exists():
        raise FileExistsError(f"{path} already holds an index")
    clock = _Clock(timings)
    scratch = Path(tempfile.mkdtemp(prefix=".ray-parts-", dir=Path(path).parent))
    stopping: threading.Thread | None = None
    try:
        own = BuildWorker(kind, filesystem, settings, extractor, encoder, batch_size, str(scratch))
        run = _Run(plan_units(files, workers), progress)
        started = False
        with _switch_interval(DRIVER_SWITCH_INTERVAL_S):
            helper = _Helper(own, run)  # works while Ray is imported and started
            try:
                ray = require("ray", "ray")
                if not ray.is_initialized():
                    options: dict[str, Any] = {
                        "include_dashboard": False,
                        "log_to_driver": False,
                        **(init_options or {}),
                    }
                    environment: Mapping[str, str] = {}
                    if address is None:
                        options.setdefault("num_cpus", workers)
                        options.setdefault(
                            "object_store_memory", _object_store_bytes(files, filesystem)
                        )
                        environment = FOREGROUND
                    with _environment(environment):
                        ray.init(address=address, **options)
                    started = True
                clock.lap("ray.init (the driver runs pass 1 meanwhile)")
                _with_actors(ray, run, own, helper, workers, clock)
            except BaseException:
                helper.stop()
                if started:
                    ray.shutdown()
                raise
            helper.stop()
        # every part is on the driver's disk: Ray stops (or disconnects) while the driver merges
        stopping = threading.Thread(target=ray.shutdown if started else _nothing)
        stopping.start()
        loaded = [load_part(scratch, unit.number) for unit in run.units]
        _check_parts(loaded)
        arrays = parts.merge_parts(loaded)
        del loaded
        clock.lap("merge (segment arrays from the parts)")
        index = CorpusIndex.create(
            path,
            dim=arrays["vectors"].shape[1],
            settings=settings,
            encoder=own.encoder,
            extractor=extractor,
        )
        index.write_first_segment(arrays)
        clock.lap("write")
        stopping.join()
        if started:
            clock.lap("ray.shutdown (the rest of it, after the write)")
    finally:
        if stopping is not None:
            stopping.join()
        shutil.rmtree(scratch, ignore_errors=True)
    logger.info(
        "built %s with Ray from %d shard(s): %d passages", path, len(files), sum(run.counts)
    )
    return index


@contextmanager
def _switch_interval(seconds: float) -> Iterator[None]:
    """The interpreter's thread switch interval set to ``seconds`` inside the block."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``variables`` set inside the block, as it was after it."""
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _nothing() -> None:
    """Nothing to stop (a Ray the caller started keeps running)."""


class _Run:
    """The units of one build, handed out one at a time to the driver's helper thread and
    the actors, and what pass 1 found for each (entries, rows, who holds the unit)."""

    def __init__(self, units: list[Unit], progress: Progress | None) -> None:
        self.units = units
        self.progress = progress
        self.entries: dict[int, parts.Part] = {}
        self.owners: dict[int, Any] = {}
        self.counts = [0] * len(units)
        self._queue = list(reversed(units))
        self._lock = threading.Lock()

    def take(self) -> Unit | None:
        with self._lock:
            return self._queue.pop() if self._queue else None

    def read(self, unit: Unit, entries: parts.Part, owner: Any) -> None:
        """Record pass 1 of ``unit`` by ``owner`` (``None``: the driver)."""
        with self._lock:
            self.entries[unit.number], self.owners[unit.number] = entries, owner
            self.counts[unit.number] = int(entries["rows"][0])
            if self.progress is not None:
                self.progress(READ_STAGE, sum(self.counts), 0)


class _Helper:
    """The driver's share of pass 1: a thread running units on the driver's own
    :class:`BuildWorker` until :meth:`stop` (called once Ray is up)."""

    def __init__(self, worker: BuildWorker, run: _Run) -> None:
        self.worker, self.run = worker, run
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="ray-build-driver", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            while not self._stop.is_set():
                unit = self.run.take()
                if unit is None:
                    return
                self.run.read(unit, self.worker.read(unit)[0], None)
        except BaseException as exc:  # re-raised on the driver's main thread by stop()
            self.error = exc

    def stop(self) -> None:
        """Take no more units, wait for the current one, raise what the thread raised."""
        self._stop.set()
        self._thread.join()
        error, self.error = self.error, None
        if error is not None:
            raise error


def _with_actors(
    ray: Any,
    run: _Run,
    own: BuildWorker,
    helper: _Helper,
    workers: int,
    clock: _Clock,
) -> None:
    """Both passes with ``workers`` actors (none when the driver read every unit while
    Ray started); parts end up under the driver's folder."""
    folder = Path(str(own.folder))
    cpu = 0.0
    pool: list[Any] = []
    first = run.take()
    if first is not None:
        actor = ray.remote(num_cpus=1)(BuildWorker)
        on_disk = str(folder) if _on_this_machine(ray) else None
        pool = [
            actor.remote(*own.arguments, on_disk)
            for _ in range(min(workers, len(run.units) - first.number))
        ]
        cpu += _pass_one(ray, pool, run, first)
    helper.stop()
    clock.lap("pass 1 (read, names, words, entities)", workers_cpu=cpu)
    n = sum(run.counts)
    if n == 0:
        raise ValueError(f"the input shards {[u.path for u in run.units[:3]]} hold no passages")
    firsts = np.cumsum([0, *run.counts[:-1]]).tolist()
    entries = [run.entries[unit.number] for unit in run.units]
    shared = ray.put(entries) if pool else None
    pending = {
        run.owners[u.number].link.remote(u.number, firsts[u.number], shared): u.number
        for u in run.units
        if run.owners[u.number] is not None
    }
    done = 0
    for unit in run.units:  # the driver's own units, while the actors link theirs
        if run.owners[unit.number] is None:
            own.link(unit.number, firsts[unit.number], entries)
            done += run.counts[unit.number]
            if run.progress is not None:
                run.progress(LINK_STAGE, done, n)
    cpu = 0.0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        number = pending.pop(ready[0])
        returned, seconds = ray.get(ready[0])
        cpu += seconds
        if returned is not None:
            save_part(folder, number, returned)
        done += run.counts[number]
        if run.progress is not None:
            run.progress(LINK_STAGE, done, n)
    own.dictionary = None  # the driver's copy: not needed for the merge
    run.entries.clear()
    clock.lap("pass 2 (links, parts written)", workers_cpu=cpu)


def _pass_one(ray: Any, pool: list[Any], run: _Run, first: Unit) -> float:
    """Pass 1 on the actors, from ``first`` on, each unit to whichever actor is free (two
    queued per actor); the actors' CPU seconds."""
    pending: dict[Any, tuple[Any, Unit]] = {}
    unit: Unit | None = first
    for actor in pool * 2:
        if unit is None:
            break
        pending[actor.read.remote(unit)] = (actor, unit)
        unit = run.take()
    cpu = 0.0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        actor, done = pending.pop(ready[0])
        entries, seconds = ray.get(ready[0])
        run.read(done, entries, actor)
        cpu += seconds
        if unit is not None:
            pending[actor.read.remote(unit)] = (actor, unit)
            unit = run.take()
    return cpu


def _check_parts(loaded: Sequence[Mapping[str, np.ndarray]]) -> None:
    """Every part has vectors of one dimension, and no passage id repeats."""
    dims = sorted({int(part["vectors"].shape[1]) for part in loaded if len(part["vectors"])})
    if len(dims) > 1:
        raise ValueError(f"the input shards hold vectors of several lengths {dims[:5]}")
    hashes = np.concatenate([np.asarray(part["id.key"]) for part in loaded])
    if len(np.unique(hashes)) == len(hashes):
        return
    ids = [i for part in loaded for i in parts.decoded(part, "ids")]
    repeated = len(ids) - len(set(ids))
    if repeated:
        raise ValueError(f"the input shards repeat {repeated} passage id(s); ids must be unique")


def _matrix(column: Any) -> np.ndarray:
    """A list (or fixed-size list) column of equal-length vectors as a 2-D array."""
    array = column.combine_chunks()
    if len(array) == 0:
        return np.zeros((0, getattr(array.type, "list_size", 0)), dtype=np.float32)
    lengths = (
        set(np.diff(array.offsets.to_numpy()).tolist())
        if hasattr(array, "offsets")
        else {array.type.list_size}
    )
    if len(lengths) != 1:
        raise ValueError(
            f"the 'vector' column holds vectors of several lengths {sorted(lengths)[:5]}"
        )
    dim = lengths.pop()
    values = array.flatten().to_numpy(zero_copy_only=False)
    return values.reshape(len(array), dim)


class _Clock:
    """Logs each phase of a build (``INFO``): wall seconds, the driver's and the actors' CPU
    seconds; appends the same record to ``timings`` when given."""

    def __init__(self, timings: list[dict[str, Any]] | None) -> None:
        self.timings = timings
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self, phase: str, workers_cpu: float = 0.0) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        record = {
            "phase": phase,
            "wall_s": wall - self.wall,
            "driver_cpu_s": cpu - self.cpu,
            "workers_cpu_s": workers_cpu,
        }
        logger.info(
            "ray build: %s took %.2f s (CPU: driver %.2f s, workers %.2f s)",
            phase,
            record["wall_s"],
            record["driver_cpu_s"],
            workers_cpu,
        )
        if self.timings is not None:
            self.timings.append(record)
        self.wall, self.cpu = wall, cpu
