"""A pinned version of a :class:`~rag_multihop.store.CorpusIndex`, read-only.

Opening maps the segments' arrays and the version's serving arrays (written when the
version was committed: :mod:`rag_multihop.store.served`) and computes the live-row mask;
every structure a method needs wraps those maps, in the live passages' numbering (the
numbering a fresh in-memory build over the same passages in the same order has): nothing
is gathered, and no text is read, tokenised or extracted again.

- :attr:`IndexSnapshot.corpus`, :attr:`~IndexSnapshot.vectors`,
  :attr:`~IndexSnapshot.dense_index`: passages, unit vectors, dense search;
- :attr:`~IndexSnapshot.title_index`: the title dictionary over every passage's names
  (memory-mapped look-ups); :attr:`~IndexSnapshot.subject_rows`: the passages also known by
  subjects read from their text;
- :attr:`~IndexSnapshot.link_graph`: the title links
  (:class:`~rag_multihop.multihop.links.LinkGraph`, specificity from the live in-links);
- :attr:`~IndexSnapshot.entity_graph`: the entity graph
  (:class:`~rag_multihop.graph.build.EntityGraph`: live mentions, entities numbered by first
  mention, the graph's title links; no synonym edges).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import numpy as np
from scipy import sparse

from rag_multihop.graph.build import EdgeWeights, EntityGraph
from rag_multihop.graph.push import PushGraph
from rag_multihop.multihop.links import LinkGraph, specificity
from rag_multihop.store import served
from rag_multihop.store.columns import EntityNames, EntityNumbers, IdPositions, PassageIds
from rag_multihop.store.segment import (
    SEGMENTS,
    Segment,
    current_manifest_path,
    read_arrays,
    read_segment,
    touch_pages,
)
from rag_multihop.store.served import serving_arrays
from rag_multihop.store.serving import (
    IndexCorpus,
    LinkContexts,
    LiveVectors,
    SegmentedDenseIndex,
)
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.sidecars import Sidecar, no_sidecar, read_sidecars
from rag_multihop.store.views import SegmentSet, StoredTitleIndex


def alive_mask(segments: Sequence[Segment], n_rows: int) -> np.ndarray:
    """Live rows: every row added by a segment, minus every segment's tombstones."""
    alive = np.ones(n_rows, dtype=bool)
    for segment in segments:
        alive[np.asarray(segment["dead"], dtype=np.int64)] = False
    return alive


@dataclass(frozen=True, eq=False)
class StoredEntityGraph(EntityGraph):
    """An :class:`EntityGraph` whose passage ids and entity names are read from the index's
    columns and whose look-ups are hashed searches (no per-passage dict)."""

    id_positions: Mapping[str, int] = field(default_factory=dict)
    entity_numbers: Mapping[str, int] = field(default_factory=dict)
    serving: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def entity_index(self) -> Mapping[str, int]:
        return self.entity_numbers

    @property
    def passage_index(self) -> Mapping[str, int]:
        return self.id_positions

    @cached_property
    def passages_of(self) -> sparse.csr_matrix:
        return served.csr(self.serving, "pass", "row", (self.n_entities, self.n_passages))

    @cached_property
    def entity_frequency(self) -> np.ndarray:
        return np.diff(self.serving["pass.ptr"]).astype(np.int64)

    def push_walk(self, weights: EdgeWeights | None = None) -> PushGraph:
        """The stored walk for the default edge weights; made from the adjacency else."""
        if weights is None or weights == EdgeWeights():
            return served.push_graph(self.serving, self.n_nodes)
        return super().push_walk(weights)


class IndexSnapshot:
    """One version of an index, memory-mapped (make one with ``CorpusIndex.snapshot()``)."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest
        self.version = int(manifest["version"])
        self.dim = int(manifest["dim"])
        self.settings = IndexSettings.from_dict(manifest["settings"])
        self.extractor_name = str(manifest["extractor"])
        segments = [read_segment(root, entry) for entry in manifest["segments"]]
        self.segments = SegmentSet(segments, alive_mask(segments, int(manifest["rows"])))
        self.live_rows = np.flatnonzero(self.segments.alive)
        self.positions = np.full(self.segments.n_rows, -1, dtype=np.int64)
        self.positions[self.live_rows] = np.arange(len(self.live_rows))
        entry = manifest.get("serving")
        self._stored = (
            None if entry is None else read_arrays(root / SEGMENTS / entry["name"], entry["files"])
        )
        # mapped now, like the segments: a compaction or merge that removes them later
        # changes nothing for this version
        self.sidecars = read_sidecars(root, manifest)

    def sidecar(self, kind: str) -> Sidecar:
        """This version's ``kind`` sidecar (``docs/index.md``), mapped when it was opened;
        ``LookupError`` (saying how to attach one) when it has none."""
        found = self.sidecars.get(kind)
        if found is None:
            raise no_sidecar(self.root, self.manifest, kind)
        return found

    @property
    def n_live(self) -> int:
        return int(self.live_rows.shape[0])

    def preload(self) -> int:
        """Map every page of this version's files into the process now: the segments'
        arrays (vectors or the ANN's stored vectors, string columns, postings) and the
        serving arrays; returns the bytes read.

        Opening maps the files without reading them, so a fresh reader's first queries
        each fault in the pages they touch (at 1M passages its first 50 queries ran
        ~2.5× slower at p95). A server calls this once after opening, for steady latency
        from its first query; it costs one read of the files (0.39 s for the 2.7 GB of a
        1M-passage index already in the page cache, a disk read otherwise) and the pages
        count in the process's resident memory (file-backed: shared with other readers of
        the index, and the kernel may reclaim them).

        >>> import tempfile
        >>> from rag_multihop import Passage
        >>> from rag_multihop.store import CorpusIndex
        >>> index = CorpusIndex.create(tempfile.mkdtemp() + "/idx", dim=2)
        >>> _ = index.add([Passage("a", "Rope is a film.", "Rope")], np.eye(1, 2))
        >>> index.snapshot().preload() > 0
        True
        """
        arrays = [a for segment in self.segments.segments for a in segment.arrays.values()]
        return sum(touch_pages(a) for a in [*arrays, *self.serving.values()])

    def is_current(self) -> bool:
        """Whether no write has happened since this snapshot's version (reads ``CURRENT``)."""
        return current_manifest_path(self.root).name == Path(f"v-{self.version:06d}.json").name

    # ------------------------------------------------------------------ passages, vectors

    @cached_property
    def passage_ids(self) -> PassageIds:
        """The live passages' ids by position, read from the id columns on demand."""
        return PassageIds(self.segments, self.live_rows)

    @cached_property
    def id_positions(self) -> IdPositions:
        """Passage id → live position, by a hashed search of the stored ids."""
        return IdPositions(self.segments, self.positions, self.passage_ids.recent)

    @property
    def corpus(self) -> IndexCorpus:
        """The live passages as a :class:`Corpus` (a light view, made on each access: cached,
        it would make a reference cycle that keeps the snapshot's file maps open until the
        garbage collector runs)."""
        return IndexCorpus(self)

    @cached_property
    def vectors(self) -> np.ndarray:
        """The live passages' unit vectors ``(n_live, dim)``: the memory map itself for a
        one-segment version with nothing deleted (a build or a compaction), else a
        :class:`~rag_multihop.store.serving.LiveVectors` reading the segments' maps at the
        positions asked (no copy; the methods only index rows and read the shape, so it
        stands in for the array)."""
        segments = [s for s in self.segments.segments if s.rows[1] > s.rows[0]]
        if len(segments) == 1 and self.n_live == self.segments.n_rows:
            return segments[0]["vectors"]
        return cast(np.ndarray, LiveVectors(self.segments, self.live_rows, self.dim))

    @cached_property
    def dense_index(self) -> SegmentedDenseIndex:
        return SegmentedDenseIndex(self)

    # ------------------------------------------------------------------ structures

    @cached_property
    def title_index(self) -> StoredTitleIndex:
        return StoredTitleIndex(
            self.segments,
            size=self.n_live,
            positions=self.positions,
            max_words=self.settings.title_max_words,
        )

    @cached_property
    def serving(self) -> Mapping[str, np.ndarray]:
        """The version's serving arrays (:mod:`rag_multihop.store.served`): the files the
        writer stored with the version, memory-mapped; gathered from the segments only for
        a version written without them (an empty index, or a writer's own new version)."""
        if self._stored is None:
            return serving_arrays(self.segments)
        return self._stored

    @cached_property
    def subject_rows(self) -> frozenset[int]:
        """The live passages (positions) known by more names than their title: subjects
        read from their text (``IndexSettings.subjects``)."""
        return frozenset(self.serving["subject.pos"].tolist())

    @cached_property
    def link_graph(self) -> LinkGraph:
        arrays, n = self.serving, self.n_live
        weights = served.csr(arrays, "link", "dst", (n, n), data=arrays["link.w"])
        contexts = LinkContexts(
            weights.indptr,
            weights.indices,
            arrays["link.seg"],
            arrays["link.entry"],
            self.segments.segments,
            lambda position: self.segments.string("texts", int(self.live_rows[position])),
            self.settings.context_window,
        )
        return LinkGraph(weights, specificity(arrays["link.in"], n), contexts)

    @cached_property
    def entity_graph(self) -> EntityGraph:
        arrays, n = self.serving, self.n_live
        order = arrays["ent.order"]
        m = len(order)
        number = np.full(self.segments.n_entities, -1, dtype=np.int64)
        number[order] = np.arange(m)
        names = EntityNames(self.segments, order)
        return StoredEntityGraph(
            self.passage_ids,
            names,
            served.csr(arrays, "ment", "ent", (n, m)),
            served.csr(arrays, "glink", "dst", (n, n)),
            sparse.csr_matrix((m, m)),
            f"corpus-index:{self.root}:v{self.version}",
            {
                "extractor": self.extractor_name,
                "encoder": None,
                "max_title_words": self.settings.graph_max_title_words,
            },
            id_positions=self.id_positions,
            entity_numbers=EntityNumbers(names, number),
            serving=arrays,
        )
