"""The persistent, incremental corpus index: one folder, immutable segments, one writer.

A :class:`CorpusIndex` holds the passages, their vectors and every corpus-derived
structure the methods use (title dictionary, title links, entity mentions, the entity
graph's title links), as memory-mapped arrays in segments (see ``docs/index.md``):

- :meth:`CorpusIndex.add` / :meth:`~CorpusIndex.delete` / :meth:`~CorpusIndex.upsert`
  write one new segment each, holding the new passages, tombstones for deleted ones, and
  the new links of the old passages the change touches (recomputed for those that can name
  an added title, found through the ``piece`` postings; patched from their stored spans for
  those that linked to a deleted page; never by reading the whole corpus);
  :meth:`~CorpusIndex.compact` rewrites the live passages as one segment;
- every write is one new version (a manifest; ``CURRENT`` moves last, atomically);
  :meth:`~CorpusIndex.snapshot` pins the version current when it is called, and a writer
  working meanwhile never changes what that snapshot sees;
- one writer at a time (``flock``; a killed writer's lock is released by the kernel).

Example (a toy 2-dimensional "encoder": vectors are given):
    >>> import tempfile, numpy as np
    >>> from rag_multihop import Passage
    >>> path = tempfile.mkdtemp() + "/idx"
    >>> index = CorpusIndex.create(path, dim=2)
    >>> index.add([Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope"),
    ...            Passage("b", "Alfred Hitchcock was a director.", "Alfred Hitchcock")],
    ...           np.array([[1.0, 0.0], [0.6, 0.8]]))
    1
    >>> snapshot = index.snapshot()
    >>> snapshot.version, snapshot.corpus.ids, snapshot.link_graph.targets(0)
    (1, ['a', 'b'], {1: 1.0})
    >>> index.delete(["b"])
    2
    >>> snapshot.corpus.ids, index.snapshot().corpus.ids
    (['a', 'b'], ['a'])
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._atomic import ArtifactError
from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.fingerprint import FINGERPRINT_TOLERANCE, EncoderFingerprint
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.index.ann import check_ann, make_ann_index, resolve_ann
from rag_multihop.multihop.subjects import NAMES_VERSION
from rag_multihop.store import batches, derive, stream
from rag_multihop.store.batches import Progress
from rag_multihop.store.encoder_check import index_encoder_similarity
from rag_multihop.store.merging import MergePolicy
from rag_multihop.store.patch import linked_sources, patch_links
from rag_multihop.store.segment import (
    LOCK,
    MANIFESTS,
    POINTER,
    READ_LOCK,
    SEGMENTS,
    SERVING_PREFIX,
    Segment,
    StagedSegment,
    check_lock_timeout,
    check_manifest_fields,
    current_manifest_path,
    drop_pages,
    manifest_name,
    no_reader_opening,
    opening_version,
    read_manifest,
    read_segment,
    release_freed_memory,
    remove_unreferenced,
    write_manifest,
    write_segment,
    writer_lock,
)
from rag_multihop.store.served import iter_serving_arrays
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.sidecars import (
    AUTO_PRODUCERS,
    ROWS,
    SidecarProducer,
    check_identity,
    commit_sidecars,
    new_entry,
    read_sidecar,
    remove_staging,
    remove_unreferenced_sidecars,
    sidecar_summary,
    write_folder,
)
from rag_multihop.store.snapshot import IndexSnapshot, alive_mask
from rag_multihop.store.views import PrefetchedTitleIndex, SegmentSet
from rag_multihop.types import Passage
from rag_multihop.validation import (
    as_embedding_matrix,
    check_id_unicode,
    check_positive_int,
    l2_normalize,
)

logger = logging.getLogger(__name__)

FORMAT = "rag-multihop-corpus-index"
FORMAT_VERSION = 6
READABLE_FORMAT_VERSIONS = (4, 5, 6)
"""Format 6 deflates a large segment's texts (:mod:`rag_multihop.store.texts`); format 5
packs the arrays a write makes in one file (``segment.PACK_FILE``); format 4 (one ``.npy``
per array) and 5 are read as they are, and their next write makes them format 6."""
DEFAULT_LOCK_TIMEOUT = 30.0
SNAPSHOT_ATTEMPTS = 5
"""Versions :meth:`CorpusIndex.snapshot` tries when writers keep replacing the one it read."""
UNCHANGED_COSINE = 1 - 1e-6
"""An upserted passage whose id, text and title the index holds, with a stored vector at
least this similar to the given one, is left as it is: re-embedding the same text in
another batch moves a vector by float rounding only, and re-ingesting unchanged documents
should cost no write."""
DEFAULT_MERGE = MergePolicy()
"""Ten trailing segments of one size tier are rewritten as one by the write that makes them
ten (:mod:`~rag_multihop.store.merging`)."""
ATTACH_BATCH = 65_536
"""Passages :meth:`CorpusIndex.attach_sidecar` computes and writes at a time (one part each):
its memory stays bounded whatever the corpus size."""


class CorpusIndex:
    """A handle on an index folder (create one with :meth:`create` or :meth:`build`).

    Args:
        path: the index folder.
        extractor: the entity extractor writes use; it must be the one the index was
            created with (compared by ``name``); :class:`HeuristicExtractor` by default.
        lock_timeout: seconds a write waits for another writer before
            :class:`~rag_multihop.store.segment.IndexLockedError`.
        progress: called as ``progress(stage, passages done, passages in all)`` after
            each batch of a build's (or compaction's) long stages
            (:func:`rag_multihop.store.progress.progress_bars` shows them as bars).
        sidecars: producers of the index's sidecars (``docs/index.md``: AAR passage
            transforms, RaLa token states); a write computes each attached sidecar's values
            of its new passages with them (``aar`` needs none: its head holds the model).
        merge: when a write rewrites the small segments at the index's end with its own
            (:class:`~rag_multihop.store.merging.MergePolicy`; ``None``: never, every write
            appends a segment until :meth:`compact`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        extractor: EntityExtractor | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        progress: Progress | None = None,
        sidecars: Sequence[SidecarProducer] = (),
        merge: MergePolicy | None = DEFAULT_MERGE,
    ) -> None:
        self.path = Path(path)
        self.merge = _checked_merge(merge)
        self.progress = progress
        self.sidecars = {producer.kind: producer for producer in sidecars}
        self.extractor = extractor or HeuristicExtractor()
        self.lock_timeout = check_lock_timeout(lock_timeout)
        manifest = self.manifest()
        if manifest.get("extractor") != self.extractor.name:
            raise ValueError(
                f"the index at {self.path} was built with extractor {manifest.get('extractor')!r}"
                f", not {self.extractor.name!r}; open it with the same extractor"
            )

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        dim: int,
        settings: IndexSettings | None = None,
        encoder: Encoder | None = None,
        extractor: EntityExtractor | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        progress: Progress | None = None,
        sidecars: Sequence[SidecarProducer] = (),
        merge: MergePolicy | None = DEFAULT_MERGE,
    ) -> CorpusIndex:
        """An empty index at ``path`` (an error if one is there) for ``dim``-dimensional
        vectors; ``encoder`` (optional) is fingerprinted into the manifest. ``settings.ann``
        must fit ``dim`` (a PQ must split it)."""
        dim = check_positive_int(dim, "dim")
        check_lock_timeout(lock_timeout)
        _checked_merge(merge)
        root = Path(path)
        if (root / POINTER).exists():
            raise FileExistsError(f"{root} already holds an index; open it with CorpusIndex()")
        if root.exists() and not root.is_dir():
            raise NotADirectoryError(f"index path {root} is a file")
        settings = settings or IndexSettings()
        check_ann(settings.ann, auto=False, dim=dim)
        extractor = extractor or HeuristicExtractor()
        fingerprint = None
        if encoder is not None:
            if encoder.dim != dim:
                raise ValueError(f"encoder {encoder.name!r} has dimension {encoder.dim}, not {dim}")
            found = EncoderFingerprint.of(encoder)
            fingerprint = {
                "name": encoder.name,
                "texts": list(found.texts),
                "vectors": found.vectors.tolist(),
            }
        root.mkdir(parents=True, exist_ok=True)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "version": 0,
            "created": time.time(),
            "dim": dim,
            "settings": settings.to_dict(),
            "extractor": extractor.name,
            "encoder": fingerprint,
            "names_version": NAMES_VERSION,
            "rows": 0,
            "entities": 0,
            "live": 0,
            "segments": [],
        }
        with writer_lock(root, lock_timeout):
            if (root / POINTER).exists():
                raise FileExistsError(f"{root} already holds an index")
            write_manifest(root, manifest)
        return cls(
            root,
            extractor=extractor,
            lock_timeout=lock_timeout,
            progress=progress,
            sidecars=sidecars,
            merge=merge,
        )

    @classmethod
    def build(
        cls,
        path: str | os.PathLike[str],
        passages: Sequence[Passage],
        vectors: np.ndarray,
        **options: Any,
    ) -> CorpusIndex:
        """:meth:`create` an index (``options``: its arguments) and :meth:`add` ``passages``."""
        matrix = as_embedding_matrix(vectors, name="vectors")
        made = _missing_entries(Path(path))
        index = cls.create(path, dim=matrix.shape[1], **options)
        with _undone_on_failure(index.path, made):
            index.add(passages, matrix)
        return index

    @classmethod
    def build_batches(
        cls,
        path: str | os.PathLike[str],
        batches: Iterable[tuple[Sequence[Passage], np.ndarray]],
        **options: Any,
    ) -> CorpusIndex:
        """:meth:`create` an index (``options``: its arguments) of the passages ``batches``
        yield with their vectors, streamed: each batch's columns go to disk as it is read
        (:mod:`~rag_multihop.store.stream`), so memory does not grow with the corpus
        beyond its name dictionary. The result equals :meth:`build` of all the passages.

        >>> import tempfile
        >>> from rag_multihop import Passage
        >>> batches = (([Passage(f"p{i}", f"Text {i}.", f"T{i}")], np.eye(2)[i : i + 1])
        ...            for i in range(2))
        >>> CorpusIndex.build_batches(tempfile.mkdtemp() + "/idx", batches).info()["passages"]
        2
        """
        stream_of = iter(batches)
        for passages, vectors in stream_of:
            if len(passages):
                matrix = as_embedding_matrix(vectors, name="vectors")
                break
        else:
            raise ValueError("batches holds no passages; an index is built from at least one")
        made = _missing_entries(Path(path))
        index = cls.create(path, dim=matrix.shape[1], **options)
        with (
            _undone_on_failure(index.path, made),
            writer_lock(index.path, index.lock_timeout),
        ):
            state = _State.read(index.path)
            version = index._first_segment(
                state, itertools.chain([(passages, matrix)], stream_of), index.settings
            )
        logger.info("index %s version %d: built from batches", index.path, version)
        return index

    # ------------------------------------------------------------------ reading

    def manifest(self) -> dict[str, Any]:
        """The current version's manifest (read afresh)."""
        return read_current_manifest(self.path)

    @property
    def version(self) -> int:
        return int(self.manifest()["version"])

    @property
    def settings(self) -> IndexSettings:
        return IndexSettings.from_dict(self.manifest()["settings"])

    @property
    def dim(self) -> int:
        return int(self.manifest()["dim"])

    def snapshot(self) -> IndexSnapshot:
        """The current version, pinned: memory-mapped, read-only, unaffected by later writes."""
        for attempt in range(SNAPSHOT_ATTEMPTS):
            try:
                with opening_version(self.path):  # a writer removes nothing meanwhile
                    manifest = self.manifest()
                    return IndexSnapshot(self.path, manifest)
            except ArtifactError:
                # a write may have removed this version's serving arrays (or a compaction
                # its segments) after we read CURRENT: open the new version
                last = attempt == SNAPSHOT_ATTEMPTS - 1
                if last or self.manifest()["version"] == manifest["version"]:
                    raise
        raise AssertionError("unreachable")

    def encoder_matches(self, encoder: Encoder) -> bool:
        """Whether ``encoder`` is the model the index was created with (``True`` when the
        index recorded none)."""
        similarity = index_encoder_similarity(self.manifest(), encoder)
        return similarity is None or similarity >= 1.0 - FINGERPRINT_TOLERANCE

    def names_outdated(self) -> bool:
        """Whether another version of the name reader read this index's names: adding
        passages then raises until :meth:`compact` reads every name again (an app that owns
        its index compacts it; see ``docs/index.md``)."""
        return stored_names_version(self.manifest()) != NAMES_VERSION

    def info(self) -> dict[str, Any]:
        """Version, counts, settings, segments and bytes on disk (JSON-ready)."""
        manifest = self.manifest()
        size = _bytes_on_disk(self.path)
        return {
            "path": str(self.path),
            "version": manifest["version"],
            "passages": manifest["live"],
            "rows": manifest["rows"],
            "deleted": manifest["rows"] - manifest["live"],
            "entities": manifest["entities"],
            "segments": len(manifest["segments"]),
            "dim": manifest["dim"],
            "settings": manifest["settings"],
            "extractor": manifest["extractor"],
            "names_version": stored_names_version(manifest),
            "encoder": None if manifest["encoder"] is None else manifest["encoder"]["name"],
            "sidecars": sidecar_summary(manifest),
            "bytes": size,
        }

    # ------------------------------------------------------------------ writing

    def add(self, passages: Sequence[Passage], vectors: np.ndarray) -> int:
        """Add passages (ids not in the index) with one vector each; the new version
        (the current one, unchanged, when ``passages`` is empty)."""
        return self._write(passages, vectors, replace=False)

    def upsert(
        self, passages: Sequence[Passage], vectors: np.ndarray, *, delete: Iterable[str] = ()
    ) -> int:
        """Add passages, replacing those whose ids are already in the index, and delete the
        ids of ``delete`` that are there (in the same version: a reader never sees a
        document half replaced); the new version. A passage the index already holds as
        given (same id, text and title, its vector within :data:`UNCHANGED_COSINE`) is left
        as it is, in its place: re-ingesting unchanged documents writes nothing (the
        current version is returned)."""
        if isinstance(delete, str):
            raise TypeError("delete must be a collection of passage ids, not one string")
        return self._write(passages, vectors, replace=True, delete=list(delete))

    def delete(self, ids: Iterable[str], *, missing_ok: bool = False) -> int:
        """Delete passages by id (tombstones until :meth:`compact`); unknown ids raise
        ``KeyError`` unless ``missing_ok``. The new version (unchanged when nothing is
        deleted)."""
        if isinstance(ids, str):
            raise TypeError("ids must be a collection of passage ids, not one string")
        wanted = list(dict.fromkeys(ids))
        bad = [i for i in wanted if not isinstance(i, str) or not i]
        if bad:
            raise ValueError(f"ids must be non-empty strings, got {bad[:3]}")
        check_id_unicode(wanted, "to delete")
        if not wanted:
            return self.version
        with writer_lock(self.path, self.lock_timeout):
            state = _State.read(self.path, vectors=False)
            rows = state.view.rows_of(wanted)
            missing = [i for i, row in zip(wanted, rows, strict=True) if row is None]
            if missing and not missing_ok:
                raise KeyError(
                    f"{len(missing)} id(s) are not in the index, e.g. {missing[:5]}; pass "
                    "missing_ok=True (rag-multihop index delete --missing-ok) to ignore them"
                )
            dead = [row for row in rows if row is not None]
            if not dead:
                return state.version
            return self._commit(state, [], np.zeros((0, state.dim), np.float32), dead)

    def compact(self) -> int:
        """Rewrite the live passages as one segment (tombstones and superseded links
        dropped, entities renumbered), streamed batch by batch; remove the segments and
        manifests no longer current. The new version."""
        with writer_lock(self.path, self.lock_timeout):
            state = _State.read(self.path)
            empty = _State(state.manifest, [], np.zeros(0, dtype=bool))
            version = self._first_segment(
                empty,
                state.live_batches(batches.DEFAULT_BATCH_SIZE * 8),
                IndexSettings.from_dict(state.manifest["settings"]),
                normalized=True,
                base=state,
                carried=np.flatnonzero(state.alive),
            )
            manifest = self.manifest()
            kept = {s["name"] for s in manifest["segments"]} | {manifest["serving"]["name"]}
            removed: list[str] = []
            with no_reader_opening(self.path) as free:
                if free:  # else the next compaction removes them
                    removed += remove_unreferenced(self.path, kept, manifest_name(version))
                    removed += remove_unreferenced_sidecars(self.path, manifest)
            logger.info("compacted %s to version %d; removed %s", self.path, version, removed)
            return version

    def _write(
        self,
        passages: Sequence[Passage],
        vectors: np.ndarray,
        *,
        replace: bool,
        delete: Sequence[str] = (),
    ) -> int:
        passages = list(passages)
        for p in passages:
            if not isinstance(p, Passage):
                raise TypeError(f"passages must be Passage objects, got {type(p).__name__}")
        dim = self.dim
        matrix = as_embedding_matrix(vectors, name="vectors", dim=dim) if passages else None
        if matrix is not None and matrix.shape[0] != len(passages):
            raise ValueError(f"got {matrix.shape[0]} vectors for {len(passages)} passages")
        ids = [p.id for p in passages]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"passages repeat id(s) {dupes[:5]}; ids must be unique")
        bad = [i for i in delete if not isinstance(i, str) or not i]
        if bad:
            raise ValueError(f"ids to delete must be non-empty strings, got {bad[:3]}")
        check_id_unicode(delete, "to delete")
        if not passages and not delete:
            return self.version
        with writer_lock(self.path, self.lock_timeout):
            state = _State.read(self.path, vectors=False)
            rows = state.view.rows_of(ids)
            given = set(ids)
            others = [i for i in dict.fromkeys(delete) if i not in given]
            extra = [row for row in state.view.rows_of(others) if row is not None]
            present = [i for i, row in zip(ids, rows, strict=True) if row is not None]
            if present and not replace:
                raise ValueError(
                    f"{len(present)} id(s) are already in the index, e.g. {present[:5]}; use "
                    "upsert() (rag-multihop index add --upsert) to replace them"
                )
            if matrix is None:
                matrix = np.zeros((0, dim), dtype=np.float32)
            if present:
                same = state.holds_as_given(self.path, passages, matrix, rows)
                if any(same):
                    logger.info("%d upserted passages are unchanged: left as they are", sum(same))
                    changed = [i for i, kept in enumerate(same) if not kept]
                    passages = [passages[i] for i in changed]
                    matrix, rows = matrix[changed], [rows[i] for i in changed]
            dead = [row for row in rows if row is not None] + extra
            if not passages and not dead:
                return state.version
            if passages:
                check_names_version(state.manifest, self.path)
            return self._commit(state, passages, matrix, dead)

    def _commit(
        self, state: _State, passages: Sequence[Passage], vectors: np.ndarray, dead: Sequence[int]
    ) -> int:
        """Write one segment (``passages`` added, ``dead`` rows deleted, touched links
        recomputed; the trailing segments the merge policy names rewritten into it) and
        the next version's manifest over ``state``."""
        settings = IndexSettings.from_dict(state.manifest["settings"])
        stored = state.manifest.get("sidecars") or {}
        for kind, producer in self.sidecars.items():  # refused before any work or file
            if kind in stored and passages:
                check_identity(producer, stored[kind], self.path)
        merged = 0
        if state.segments:
            unit = l2_normalize(vectors)
            kept, carried = state, None  # the version the new segment is written over
            alive = state.alive.copy()  # after this write's deletes
            alive[np.asarray(dead, dtype=np.int64)] = False
            start = self._merge_start(state, len(passages), alive)
            if start is not None:
                kept, carried, tail, tail_vectors = self._merge_tail(state, start, alive)
                merged = len(state.segments) - start
                passages, unit = [*tail, *passages], np.concatenate([tail_vectors, unit])
                dead = np.flatnonzero(kept.alive & ~state.alive[: kept.n_rows]).tolist() + [
                    row for row in dead if row < kept.n_rows
                ]
            arrays, recomputed, patched = self._update_arrays(kept, settings, passages, unit, dead)
            version = self._publish(kept, arrays, settings, base=state, carried=carried)
        else:  # a first build: the batch plan, streamed to disk
            size = batches.DEFAULT_BATCH_SIZE * 8
            chunks = (
                (passages[i : i + size], vectors[i : i + size])
                for i in range(0, len(passages), size)
            )
            version = self._first_segment(state, chunks, settings)
            recomputed = patched = 0
        logger.info(
            "index %s version %d: +%d passages, -%d, links of %d recomputed, %d patched, "
            "%d segments merged",
            self.path,
            version,
            len(passages),
            len(dead),
            recomputed,
            patched,
            merged,
        )
        return version

    def _merge_start(self, state: _State, pending: int, alive: np.ndarray) -> int | None:
        """The first of ``state``'s segments a write of ``pending`` passages leaving the
        rows ``alive`` live rewrites with its own (:attr:`merge`), or ``None``."""
        if self.merge is None or stored_names_version(state.manifest) != NAMES_VERSION:
            return None  # outdated names: a merge would read them again (compact() does)
        live = [int(alive[s.rows[0] : s.rows[1]].sum()) for s in state.segments]
        return self.merge.merge_from(live, pending)

    def _merge_tail(
        self, state: _State, start: int, alive: np.ndarray
    ) -> tuple[_State, np.ndarray, list[Passage], np.ndarray]:
        """The version made by ``state``'s segments before ``start`` (as they were written)
        and the passages of the later ones among the rows ``alive``: their old rows, the
        passages and their stored unit vectors."""
        first = state.segments[start].rows[0]
        kept = state.segments[:start]
        base = _State(state.manifest, kept, alive_mask(kept, first))
        rows = first + np.flatnonzero(alive[first:])
        tail = [read_segment(self.path, entry, ann=True) for entry in state.entries[start:]]
        return base, rows, self._passages(state, rows), _stored_vectors(tail, rows, state.dim)

    def _first_segment(
        self,
        state: _State,
        chunks: Iterable[tuple[Sequence[Passage], np.ndarray]],
        settings: IndexSettings,
        *,
        normalized: bool = False,
        base: _State | None = None,
        carried: np.ndarray | None = None,
    ) -> int:
        """Stream ``chunks`` into the first segment over the empty ``state`` and publish it
        (``base``: the version a compaction rewrites, whose live rows ``carried`` are); the
        new version."""
        staged = StagedSegment(self.path)
        try:
            arrays = stream.stream_arrays(
                staged,
                chunks,
                settings,
                self.extractor,
                dim=state.dim,
                normalized=normalized,
                progress=self.progress,
            )
            return self._publish(state, arrays, settings, base=base, staged=staged, carried=carried)
        except BaseException:
            staged.discard()
            raise

    def write_first_segment(self, arrays: dict[str, np.ndarray]) -> int:
        """Commit the arrays an indexing engine built for this empty index
        (:func:`rag_multihop.store.batches.segment_arrays`; vectors unit rows of the index's
        dimension) as its first segment; the new version."""
        dim = self.dim
        if arrays["vectors"].ndim != 2 or arrays["vectors"].shape[1] != dim:
            raise ValueError(
                f"vectors have shape {arrays['vectors'].shape}; this index holds {dim}-dim rows"
            )
        with writer_lock(self.path, self.lock_timeout):
            state = _State.read(self.path)
            if state.n_rows:
                raise ValueError(
                    f"{self.path} already holds passages; write_first_segment needs an empty index"
                )
            return self._publish(state, arrays, self.settings)

    def _update_arrays(
        self,
        state: _State,
        settings: IndexSettings,
        passages: Sequence[Passage],
        unit: np.ndarray,
        dead: Sequence[int],
    ) -> tuple[dict[str, np.ndarray], int, int]:
        """The arrays of a segment over an index that has some: ``passages`` added,
        ``dead`` deleted, the links of the old passages the change touches recomputed
        (found through the ``piece`` postings) or patched; with the numbers of both."""
        r0, e0, n = state.n_rows, state.n_entities, len(passages)
        arrays = derive.passage_arrays(passages, unit, r0)
        names = derive.passage_names(passages, settings.subjects)
        arrays |= derive.name_arrays(passages, names)
        arrays |= derive.title_arrays(names, [p.title for p in passages], r0)
        arrays |= derive.piece_arrays([p.text for p in passages], r0)
        entities = derive.extract_entities(self.extractor, passages)
        arrays |= derive.entity_arrays(entities, state.view.entity_of, e0)
        arrays["dead"] = np.array(sorted(dead), dtype=np.int32)
        e1 = e0 + len(arrays["ents.off"]) - 1
        alive = np.concatenate([state.alive, np.ones(n, dtype=bool)])
        alive[list(dead)] = False
        pending = Segment("pending", (r0, r0 + n), (e0, e1), arrays)
        view = SegmentSet([*state.segments, pending], alive)

        touched: set[int] = set()
        for key in derive.changed_keys(names, (p.title for p in passages)):
            touched.update(view.rows_with_pieces(key.split()).tolist())
        sources = linked_sources(state.segments, alive, dead)
        sources = sources[~np.isin(sources, np.fromiter(touched, np.int64, len(touched)))]
        patched_rows, patched, recompute = patch_links(state.segments, alive, sources)
        touched.update(recompute.tolist())
        old = sorted(row for row in touched if row < r0)
        rows = [*old, *range(r0, r0 + n)]
        texts = [state.view.string("texts", row) for row in old] + [p.text for p in passages]
        prefetched = PrefetchedTitleIndex(
            view,
            texts,
            max_words=settings.title_max_words,
            graph_max_words=settings.graph_max_title_words,
        )
        arrays |= derive.link_arrays(rows, texts, prefetched)
        if patched:
            arrays |= derive.concat_tables("link", arrays, patched)
        arrays |= derive.graph_link_table(
            rows, [prefetched.graph_links(row, text) for row, text in zip(rows, texts, strict=True)]
        )
        return arrays, len(old), len(patched_rows)

    def _publish(
        self,
        state: _State,
        arrays: dict[str, np.ndarray],
        settings: IndexSettings,
        *,
        base: _State | None = None,
        staged: StagedSegment | None = None,
        carried: np.ndarray | None = None,
    ) -> int:
        """Write ``arrays`` (a segment adding rows from ``state``'s end, with its ANN index
        when ``settings`` ask for one) and the next version's manifest over ``state``
        (``base``'s manifest for a compaction, whose old rows ``carried`` are); ``staged``:
        the folder holding those of the arrays already written."""
        r0, e0 = state.n_rows, state.n_entities
        n = len(arrays["ids.off"]) - 1
        e1 = e0 + len(arrays["ents.off"]) - 1
        alive = np.concatenate([state.alive, np.ones(n, dtype=bool)])
        alive[np.asarray(arrays["dead"], dtype=np.int64)] = False
        # too few rows to train the ANN (an IVF's lists, a PQ's centroids): searched exactly
        stored_ann = n and resolve_ann(settings.ann, n, state.dim) != "Flat"
        if stored_ann and staged is not None:  # a streamed build: its passes' memory is free
            release_freed_memory()
        ann = (
            make_ann_index(
                np.asarray(arrays["vectors"]),
                settings.ann,
                after_add=lambda: drop_pages(arrays["vectors"]),
            )
            if stored_ann
            else None
        )
        manifest = dict((base or state).manifest)
        version = int(manifest["version"]) + 1
        if not state.segments:  # a build or a compaction: every name read afresh
            manifest["names_version"] = NAMES_VERSION
        if manifest.get("sidecars"):  # first: a refused (stale) sidecar writes no segment
            manifest["sidecars"] = self._sidecar_parts(manifest, version, arrays, r0, carried)
        name, files = write_segment(self.path, version, arrays, ann, staged)
        segment = Segment(name, (r0, r0 + n), (e0, e1), arrays, ann, files)
        manifest.update(
            format_version=FORMAT_VERSION,  # an older readable format becomes 6 with this write
            version=version,
            created=time.time(),
            rows=r0 + n,
            entities=e1,
            live=int(alive.sum()),
            segments=[*state.entries, segment.describe()],
        )
        manifest.pop("serving", None)
        manifest["serving"] = self._write_serving(
            version, SegmentSet([*state.segments, segment], alive)
        )
        write_manifest(self.path, manifest)
        # the previous versions' serving arrays and manifests (each lists every segment, so
        # keeping them would grow the folder with the square of the writes) and the
        # segments and sidecar parts a merge replaced: readers that hold a version keep its
        # maps and its manifest in memory
        with no_reader_opening(self.path, wait=0) as free:
            if free:  # else the next write removes them
                kept = {s["name"] for s in manifest["segments"]} | {manifest["serving"]["name"]}
                remove_unreferenced(self.path, kept, manifest_name(version))
                remove_unreferenced_sidecars(self.path, manifest)
        return version

    def _write_serving(self, version: int, segments: SegmentSet) -> dict[str, Any]:
        """Compute and write the serving arrays of the version ``segments`` make, each
        saved while the next is computed; the manifest's ``"serving"`` entry."""
        staged = StagedSegment(self.path)
        try:
            for key, value in iter_serving_arrays(segments):
                staged.pack_soon(key, value)
            name, files = write_segment(
                self.path, version, {}, staged=staged, prefix=SERVING_PREFIX
            )
        except BaseException:
            staged.discard()
            raise
        return {"name": name, "files": dict(sorted(files.items()))}

    # ------------------------------------------------------------------ sidecars

    def attach_sidecar(self, producer: SidecarProducer, *, replace: bool = False) -> int:
        """Store ``producer``'s values of every live passage as a sidecar (``docs/index.md``)
        and use ``producer`` for later writes; the new version.

        Attaching the producer of a sidecar already there computes only the live passages
        it lacks (none: the version is unchanged). A sidecar made by another producer (another
        model, encoder or setting) is a ``ValueError`` unless ``replace``, which recomputes it.
        """
        kind = producer.kind
        with writer_lock(self.path, self.lock_timeout):
            remove_staging(self.path)
            state = _State.read(self.path)
            manifest = dict(state.manifest)
            entries = dict(manifest.get("sidecars") or {})
            entry = entries.get(kind)
            live = np.flatnonzero(state.alive)
            version = state.version + 1
            computed = len(live)
            if entry is not None and not replace:
                check_identity(producer, entry, self.path)
                sidecar = read_sidecar(self.path, manifest, kind)
                live = live[~sidecar.covered(live)]
                computed = len(live)
                if not computed:
                    self.sidecars[kind] = producer
                    return state.version
                head, parts = sidecar.head, list(entry["parts"])
            else:  # the head from the first batch (a codec is fitted on it), then its part
                first = live[:ATTACH_BATCH]
                head, arrays = producer.start(
                    self._passages(state, first), self._vectors(state, first)
                )
                entry = new_entry(producer, write_folder(self.path, f"h-{kind}", version, head))
                parts = [self._part(kind, version, first, arrays)] if len(first) else []
                live = live[ATTACH_BATCH:]
            for at in range(0, len(live), ATTACH_BATCH):
                rows = live[at : at + ATTACH_BATCH]
                arrays = producer.compute(
                    head, self._passages(state, rows), self._vectors(state, rows)
                )
                parts.append(self._part(kind, version, rows, arrays))
            entry = {**entry, "parts": parts}
            entries[kind] = entry
            manifest.update(version=version, created=time.time(), sidecars=entries)
            write_manifest(self.path, manifest)
            self.sidecars[kind] = producer
            logger.info(
                "index %s version %d: %s sidecar of %d passages",
                self.path,
                version,
                kind,
                computed,
            )
            return version

    def _sidecar_parts(
        self,
        manifest: dict[str, Any],
        version: int,
        arrays: dict[str, np.ndarray],
        first_row: int,
        carried: np.ndarray | None,
    ) -> dict[str, Any]:
        """The sidecars after a write (a part for its new rows, or, for a compaction, the
        live rows' values carried into one part)."""
        remove_staging(self.path)
        return commit_sidecars(
            self.path,
            version,
            manifest["sidecars"],
            self.sidecars,
            arrays,
            first_row,
            carried,
            AUTO_PRODUCERS,
        )

    def _part(
        self, kind: str, version: int, rows: np.ndarray, arrays: dict[str, np.ndarray]
    ) -> dict[str, Any]:
        """Write the values ``arrays`` of the global ``rows`` as a part of sidecar ``kind``."""
        return write_folder(
            self.path, f"p-{kind}", version, {**arrays, ROWS: rows.astype(np.int64)}
        )

    @staticmethod
    def _passages(state: _State, rows: np.ndarray) -> list[Passage]:
        return [state.passage(int(row)) for row in rows]

    @staticmethod
    def _vectors(state: _State, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of the global ``rows`` (ascending), one gather per segment."""
        return _stored_vectors(state.segments, rows, state.dim)


def _checked_merge(merge: object) -> MergePolicy | None:
    if merge is not None and not isinstance(merge, MergePolicy):
        raise TypeError(f"merge must be a MergePolicy or None, got {type(merge).__name__}")
    return merge


def _stored_vectors(segments: Sequence[Segment], rows: np.ndarray, dim: int) -> np.ndarray:
    """The stored vectors of the global ``rows`` (ascending) that ``segments`` (read with
    their vectors) hold, one gather per segment."""
    out = np.empty((len(rows), dim), dtype=np.float32)
    for segment in segments:
        start, end = segment.rows
        mine = np.flatnonzero((rows >= start) & (rows < end))
        if mine.size:
            out[mine] = np.asarray(segment["vectors"])[rows[mine] - start]
    return out


def _bytes_on_disk(root: Path) -> int:
    """The bytes of the files under ``root``, skipping what a writer removes meanwhile (a
    superseded version, a temporary): ``os.walk`` passes over a vanished folder."""
    size = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with suppress(FileNotFoundError):
                size += os.stat(os.path.join(folder, name), follow_symlinks=False).st_size
    return size


def _pointer_bytes(root: Path) -> bytes | None:
    try:
        return (root / POINTER).read_bytes()
    except OSError:
        return None


def read_current_manifest(root: Path) -> dict[str, Any]:
    """The manifest ``CURRENT`` names, of this format and with every field a reader needs,
    else :class:`ArtifactError` naming the file. A writer removes the manifest it replaces
    once ``CURRENT`` names the new one: a manifest gone after ``CURRENT`` named it is read
    again from the new pointer."""
    for attempt in range(SNAPSHOT_ATTEMPTS):
        pointer = _pointer_bytes(root)
        try:
            path = current_manifest_path(root)
            manifest = read_manifest(path)
            break
        except (ArtifactError, FileNotFoundError):
            if attempt == SNAPSHOT_ATTEMPTS - 1 or _pointer_bytes(root) == pointer:
                raise
    version = manifest.get("format_version")
    if manifest.get("format") != FORMAT or version not in READABLE_FORMAT_VERSIONS:
        raise ArtifactError(
            f"{path}: format {manifest.get('format')!r} version {version!r}; this version "
            f"reads {FORMAT} {', '.join(map(str, READABLE_FORMAT_VERSIONS))}: rebuild the "
            "index from its passages (rag-multihop index build, or CorpusIndex.build)"
        )
    check_manifest_fields(path, manifest)
    return manifest


def stored_names_version(manifest: Mapping[str, Any]) -> int:
    """The :data:`~rag_multihop.multihop.subjects.NAMES_VERSION` an index's names were read
    with (1 for an index written before versions were recorded)."""
    return int(manifest.get("names_version", 1))


def check_names_version(manifest: Mapping[str, Any], path: Path) -> None:
    """``ValueError`` when the index's names were read by another version of the name
    reader: new passages would be named otherwise than the stored ones."""
    stored = stored_names_version(manifest)
    if stored != NAMES_VERSION:
        raise ValueError(
            f"{path}: its passages' names were read by name reader version {stored}, this "
            f"library reads version {NAMES_VERSION}; adding passages would mix the two. "
            "Compact the index first (CorpusIndex.compact(), or rag-multihop index compact "
            "PATH): it reads every name again"
        )


def _missing_entries(root: Path) -> set[Path]:
    """The index folder and the entries :meth:`CorpusIndex.create` makes in it (``LOCK``,
    ``manifests/``, ``segments/``) that are not there yet: what undoing a build may remove."""
    entries = (root, root / LOCK, root / READ_LOCK, root / MANIFESTS, root / SEGMENTS)
    return {p for p in entries if not p.exists()}


@contextmanager
def _undone_on_failure(root: Path, made: set[Path]) -> Iterator[None]:
    """Undo :meth:`CorpusIndex.create` when the first write of a build fails (bad input,
    an interrupt), so that the build can be run again: the pointer and the version-0
    manifest go, and of ``made`` (:func:`_missing_entries`) the lock file and the folders
    they leave empty (a user's files stay). Nothing is removed once a version beyond 0
    exists."""
    try:
        yield
    except BaseException:
        manifest = current_manifest_path(root)
        if manifest.name == manifest_name(0):
            for path in (root / POINTER, manifest, *({root / LOCK, root / READ_LOCK} & made)):
                path.unlink(missing_ok=True)
            for folder in (root / MANIFESTS, root / SEGMENTS, root):
                if folder in made:
                    with suppress(OSError):  # not empty (or gone): left as it is
                        folder.rmdir()
        raise


class _State:
    """A version read by a writer (under the lock): segments, live rows, look-ups."""

    def __init__(
        self, manifest: dict[str, Any], segments: list[Segment], alive: np.ndarray
    ) -> None:
        self.manifest = manifest
        self.segments = segments
        self.alive = alive
        self.view = SegmentSet(segments, alive)
        names = {s.name for s in segments}
        self.entries = [e for e in manifest["segments"] if e["name"] in names]

    @classmethod
    def read(cls, root: Path, *, vectors: bool = True) -> _State:
        """The current version; without ``vectors``, no segment's stored vectors or ANN
        index (what an add or a delete, which only appends a segment, never reads)."""
        manifest = read_current_manifest(root)
        segments = [read_segment(root, e, ann=vectors) for e in manifest["segments"]]
        return cls(manifest, segments, alive_mask(segments, int(manifest["rows"])))

    @property
    def version(self) -> int:
        return int(self.manifest["version"])

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def n_rows(self) -> int:
        return int(self.alive.shape[0])

    @property
    def n_entities(self) -> int:
        return self.view.n_entities

    def live_batches(self, size: int) -> Iterator[tuple[list[Passage], np.ndarray]]:
        """The live passages with their (unit) vectors, in row order, ``size`` at a time."""
        for segment in self.segments:
            start, end = segment.rows
            live = np.flatnonzero(self.alive[start:end])
            for at in range(0, len(live), size):
                local = live[at : at + size]
                passages = [self.passage(start + int(i)) for i in local]
                yield passages, np.asarray(segment["vectors"])[local]

    def holds_as_given(
        self,
        root: Path,
        passages: Sequence[Passage],
        vectors: np.ndarray,
        rows: Sequence[int | None],
    ) -> list[bool]:
        """Per passage, whether live ``rows`` (its row, ``None`` when absent) holds it as
        given: the same text and title, and a stored unit vector within
        :data:`UNCHANGED_COSINE` of ``vectors``' row. Stored vectors are read only for
        passages whose text and title match (an ANN file that holds them is mapped then)."""
        view = self.view
        same = [
            row is not None
            and view.string("texts", row) == p.text
            and view.string("titles", row) == p.title
            for p, row in zip(passages, rows, strict=True)
        ]
        stored: dict[str, np.ndarray] = {}
        entries = {e["name"]: e for e in self.manifest["segments"]}
        unit = l2_normalize(np.asarray(vectors, dtype=np.float32))
        for i, row in enumerate(rows):
            if not same[i] or row is None:
                continue
            segment, local = view.locate(row)
            if segment.name not in stored:
                held = segment.arrays.get("vectors")
                if held is None:  # held by the segment's ANN file, not loaded by a writer
                    held = read_segment(root, entries[segment.name], ann=True)["vectors"]
                stored[segment.name] = held
            vector = np.asarray(stored[segment.name][local], dtype=np.float32)
            same[i] = float(vector @ unit[i]) >= UNCHANGED_COSINE
        return same

    def passage(self, row: int) -> Passage:
        view = self.view
        return Passage(
            view.string("ids", row), view.string("texts", row), view.string("titles", row)
        )
