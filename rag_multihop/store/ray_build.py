"""Building a :class:`~rag_multihop.store.CorpusIndex` with Ray Data, locally or on a cluster.

The engine maps the batch plan of :mod:`rag_multihop.store.batches` over shards: it reads
JSON Lines or Parquet shards (local paths, globs or any fsspec URL) with ``id``, ``text``,
``title`` (optional) and ``vector`` (optional) columns, runs pass 1 (names, words, entities;
the encoder, when vectors are not given, loaded once per worker actor) with
``map_batches``, merges the title dictionary on the driver, broadcasts it through the
object store, runs pass 2 (links), and writes the merged arrays as the index's first
segment through the store's own writer, so the index equals
:meth:`CorpusIndex.build <rag_multihop.store.CorpusIndex.build>` of the same passages.

Example (a local Ray with two workers; needs ``pip install 'rag-multihop[ray]'``)::

    from rag_multihop.store.ray_build import build_with_ray
    index = build_with_ray("my.idx", ["shards/*.parquet"], workers=2)

On a cluster, pass ``address="ray://head:10001"`` (or ``"auto"`` on a node of it); every
node needs rag-multihop installed and read access to the shards (see ``docs/scale.md``).
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._optional import require
from rag_multihop.encoders.base import Encoder
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.store import batches
from rag_multihop.store.batches import LINK_STAGE, READ_STAGE, NameDictionary, Progress
from rag_multihop.store.index import CorpusIndex
from rag_multihop.store.settings import IndexSettings
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize

logger = logging.getLogger(__name__)

FORMATS = {".jsonl": "json", ".json": "json", ".jsonl.gz": "json", ".parquet": "parquet"}
"""Shard file endings and the reader each takes."""

PASS_COLUMNS = ("id", "text", "title", "vector")


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


def _columns(table: Any) -> dict[str, list[Any]]:
    """The ``id``, ``text`` and ``title`` columns of an Arrow batch as lists, checked."""
    names = table.column_names
    for field in ("id", "text"):
        if field not in names:
            raise ValueError(
                f"input shards need a {field!r} column; this shard has {sorted(names)}"
            )
    out = {field: table.column(field).to_pylist() for field in ("id", "text")}
    out["title"] = table.column("title").to_pylist() if "title" in names else [""] * table.num_rows
    for field, values in out.items():
        for i, value in enumerate(values):
            if not isinstance(value, str) or (field != "title" and not value):
                raise ValueError(
                    f"input record {out['id'][i]!r}: field {field!r} must be a "
                    f"{'non-empty ' if field != 'title' else ''}string, got {value!r}"[:300]
                )
    return out


def _string_lists(values: list[list[str]]) -> Any:
    import pyarrow as pa

    return pa.array(values, type=pa.list_(pa.string()))


def _number_lists(values: Sequence[Any], dtype: Any) -> Any:
    """Ragged numeric lists as an Arrow list array built from one flat buffer."""
    import pyarrow as pa

    lengths = np.array([len(v) for v in values], dtype=np.int32)
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate([np.asarray(v, dtype=dtype) for v in values] or [np.zeros(0, dtype)])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.astype(dtype, copy=False)))


def _flat_lists(column: Any, dtype: Any) -> list[np.ndarray]:
    """An Arrow list column as one numpy array per row (views of one flat buffer)."""
    array = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    offsets = array.offsets.to_numpy()
    values = array.values.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    values = values[offsets[0] : offsets[-1]]
    return np.split(values, offsets[1:-1] - offsets[0])


class ReadStage:
    """Pass 1 as a Ray actor: :func:`~rag_multihop.store.batches.read_batch`, and the
    vectors when the shards hold none (the encoder is made once per actor)."""

    def __init__(
        self, subjects: bool, extractor: EntityExtractor, encoder: str | None = None
    ) -> None:
        from rag_multihop.encoders import make_encoder

        self.subjects = subjects
        self.extractor = extractor
        self.encoder = None if encoder is None else make_encoder(encoder)

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa

        columns = _columns(table)
        read = batches.read_batch(columns, subjects=self.subjects, extractor=self.extractor)
        out = {name: table.column(name) for name in PASS_COLUMNS if name in table.column_names}
        if self.encoder is not None and "vector" not in out:
            passages = batches.batch_passages(columns)
            vectors = np.asarray(
                self.encoder.encode([p.embedding_text for p in passages]), dtype=np.float32
            )
            out["vector"] = pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.reshape(-1)), vectors.shape[1]
            )
        for name in ("names", "keys", "quals", "entities"):
            out[name] = _string_lists(read[name])
        out["pieces"] = _number_lists(read["pieces"], np.uint64)
        return pa.table(out)


class LinkStage:
    """Pass 2 as a Ray actor: :func:`~rag_multihop.store.batches.link_batch` against the
    broadcast :class:`~rag_multihop.store.batches.NameDictionary` (fetched once per actor)."""

    def __init__(self, dictionary: Any) -> None:
        import ray

        self.dictionary: NameDictionary = (
            ray.get(dictionary) if isinstance(dictionary, ray.ObjectRef) else dictionary
        )

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa

        found = batches.link_batch(
            {"row": table.column("row").to_pylist(), "text": table.column("text").to_pylist()},
            self.dictionary,
        )
        return pa.table(
            {
                "row": table.column("row"),
                "link.dst": _number_lists(found["link.dst"], np.int32),
                "link.w": _number_lists(found["link.w"], np.float64),
                "link.nspan": _number_lists(found["link.nspan"], np.int32),
                "link.span": _number_lists(found["link.span"], np.int32),
                "link.sflag": _number_lists(found["link.sflag"], np.uint8),
                "glink.dst": _number_lists(found["glink.dst"], np.int32),
            }
        )


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
) -> CorpusIndex:
    """Build the index at ``path`` from the shards ``inputs`` with Ray Data.

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
        workers: worker actors per pass.
        batch_size: passages per ``map_batches`` batch.
        progress: called as ``progress(stage, done, total)`` (``total`` 0 while unknown).
        init_options: more keyword arguments for ``ray.init`` (e.g. ``object_store_memory``).
    """
    ray = require("ray", "ray")
    require("ray.data", "ray")
    import pyarrow as pa

    workers = check_positive_int(workers, "workers")
    batch_size = check_positive_int(batch_size, "batch_size")
    settings = settings or IndexSettings()
    extractor = extractor or HeuristicExtractor()
    files, kind, filesystem = expand_inputs(inputs)
    clock = _Clock()
    started = False
    if not ray.is_initialized():
        options = {"include_dashboard": False, "log_to_driver": False, **(init_options or {})}
        if address is None:
            options.setdefault("num_cpus", workers)
        ray.init(address=address, **options)
        started = True
        clock.lap("ray.init")
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        reader = ray.data.read_parquet if kind == "parquet" else ray.data.read_json
        options = {"lines": True} if kind == "json" else {}
        # read before the actors start: they hold one CPU each (a local Ray has exactly
        # ``workers``), so read and file-listing tasks queued behind them would never run
        dataset = reader(files, filesystem=filesystem, **options).materialize()
        clock.lap("read")
        if dataset.num_blocks() < 4 * workers:  # a few blocks per worker balance the load
            dataset = dataset.repartition(4 * workers).materialize()
            clock.lap("repartition")
        read_tables = list(
            _collected(
                dataset.map_batches(
                    ReadStage,
                    fn_constructor_kwargs={
                        "subjects": settings.subjects,
                        "extractor": extractor,
                        "encoder": encoder,
                    },
                    batch_size=batch_size,
                    batch_format="pyarrow",
                    compute=ray.data.ActorPoolStrategy(size=workers),
                    num_cpus=1,
                ),
                READ_STAGE,
                0,
                progress,
            )
        )
        clock.lap("pass 1 (read, names, words, entities)")
        read = pa.concat_tables(read_tables, promote_options="permissive")
        n = read.num_rows
        if n == 0:
            raise ValueError(f"the input shards {files[:3]} hold no passages")
        columns = _columns(read)
        duplicates = n - len(set(columns["id"]))
        if duplicates:
            raise ValueError(
                f"the input shards repeat {duplicates} passage id(s); ids must be unique"
            )
        if "vector" not in read.column_names:
            raise ValueError(
                "the input shards have no 'vector' column; give one or name an encoder"
            )
        vectors = _matrix(read.column("vector"))
        keys = read.column("keys").to_pylist()
        quals = read.column("quals").to_pylist()
        dictionary = NameDictionary.of(keys, quals, columns["title"], settings)
        reference = ray.put(dictionary)
        clock.lap("merge 1 (title dictionary)")
        blocks = max(1, min(n, 4 * workers))
        cuts = np.linspace(0, n, blocks + 1).astype(int)
        texts = read.column("text")
        pairs = ray.data.from_arrow(
            [
                pa.table({"row": pa.array(np.arange(a, b, dtype=np.int64)), "text": texts[a:b]})
                for a, b in itertools.pairwise(cuts.tolist())
                if b > a
            ]
        )
        linked = pa.concat_tables(
            list(
                _collected(
                    pairs.map_batches(
                        LinkStage,
                        fn_constructor_kwargs={"dictionary": reference},
                        batch_size=batch_size,
                        batch_format="pyarrow",
                        concurrency=workers,
                        num_cpus=1,
                    ),
                    LINK_STAGE,
                    n,
                    progress,
                )
            )
        )
        order = np.argsort(linked.column("row").to_numpy(), kind="stable")
        linked = linked.take(pa.array(order))
        clock.lap("pass 2 (links)")
        if not np.array_equal(linked.column("row").to_numpy(), np.arange(n)):
            raise RuntimeError("pass 2 lost or repeated passages; rerun the build")
        read_columns = {
            "names": read.column("names").to_pylist(),
            "keys": keys,
            "quals": quals,
            "pieces": _flat_lists(read.column("pieces"), np.uint64),
            "entities": read.column("entities").to_pylist(),
        }
        link_columns = {
            name: linked.column(name).to_pylist()
            for name in ("link.dst", "link.w", "link.nspan", "link.span", "link.sflag", "glink.dst")
        }
    finally:
        if started:
            ray.shutdown()
    unit = l2_normalize(as_embedding_matrix(vectors, name="vectors"))
    arrays = batches.segment_arrays(columns, read_columns, link_columns, unit)
    clock.lap("merge 2 (segment arrays)")
    made: Encoder | None = None
    if encoder is not None:
        from rag_multihop.encoders import make_encoder

        made = make_encoder(encoder)
    index = CorpusIndex.create(
        path, dim=unit.shape[1], settings=settings, encoder=made, extractor=extractor
    )
    index.write_first_segment(arrays)
    clock.lap("write")
    logger.info("built %s with Ray from %d shard(s): %d passages", path, len(files), n)
    return index


def _matrix(column: Any) -> np.ndarray:
    """A list (or fixed-size list) column of equal-length vectors as a 2-D array."""
    array = column.combine_chunks()
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
    """Logs the seconds each phase of a build took (``INFO``)."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        logger.info("ray build: %s took %.2f s", phase, now - self.last)
        self.last = now


def _collected(dataset: Any, stage: str, total: int, progress: Progress | None) -> Iterator[Any]:
    """The blocks of ``dataset``, in order, reporting progress as they arrive."""
    done = 0
    for table in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
        done += table.num_rows
        if progress is not None:
            progress(stage, done, total)
        yield table
