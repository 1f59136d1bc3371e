"""A pinned version of a :class:`~rag_multihop.store.CorpusIndex`, read-only.

Opening maps the segments' arrays and computes the live-row mask; every structure a
method needs is assembled on first use from the arrays, in the live passages' numbering
(the numbering a fresh in-memory build over the same passages in the same order has), by
vectorised gathers: no text is read, tokenised or extracted again.

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
from typing import Any

import numpy as np
from scipy import sparse

from rag_multihop.graph.build import EntityGraph
from rag_multihop.multihop.links import LinkGraph, specificity
from rag_multihop.store.columns import EntityNames, EntityNumbers, IdPositions, PassageIds
from rag_multihop.store.segment import Segment, current_manifest_path, read_segment
from rag_multihop.store.serving import IndexCorpus, LinkContexts, SegmentedDenseIndex
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.tables import gather_csr
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

    @property
    def entity_index(self) -> Mapping[str, int]:
        return self.entity_numbers

    @property
    def passage_index(self) -> Mapping[str, int]:
        return self.id_positions


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

    @property
    def n_live(self) -> int:
        return int(self.live_rows.shape[0])

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

    @cached_property
    def corpus(self) -> IndexCorpus:
        return IndexCorpus(self)

    @cached_property
    def vectors(self) -> np.ndarray:
        """The live passages' unit vectors ``(n_live, dim)``: the memory map itself for a
        compacted index, a copy of the live rows otherwise."""
        parts = []
        for segment in self.segments.segments:
            start, end = segment.rows
            if end == start:
                continue
            alive = self.segments.alive[start:end]
            parts.append(segment["vectors"] if alive.all() else segment["vectors"][alive])
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(parts)

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
    def subject_rows(self) -> frozenset[int]:
        """The live passages (positions) known by more names than their title: subjects
        read from their text (``IndexSettings.subjects``)."""
        owner, local = self._home()
        flags = np.zeros(self.n_live, dtype=bool)
        for i, segment in enumerate(self.segments.segments):
            mine = owner == i
            if mine.any():
                flags[mine] = np.asarray(segment["subject"])[local[mine]] > 0
        return frozenset(np.flatnonzero(flags).tolist())

    def _owned(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """Per live row, the segment whose ``<prefix>.rows`` defined it last and the row's
        place in that segment's table."""
        segments = self.segments.segments
        owner = np.full(self.segments.n_rows, -1, dtype=np.int64)
        local = np.full(self.segments.n_rows, -1, dtype=np.int64)
        for i, segment in enumerate(segments):
            rows = np.asarray(segment[f"{prefix}.rows"], dtype=np.int64)
            owner[rows] = i
            local[rows] = np.arange(len(rows))
        return owner[self.live_rows], local[self.live_rows]

    def _home(self) -> tuple[np.ndarray, np.ndarray]:
        """Per live row, the segment that added it and the row's place in it."""
        ends = np.array([s.rows[1] for s in self.segments.segments], dtype=np.int64)
        owner = np.searchsorted(ends, self.live_rows, side="right")
        starts = np.array([s.rows[0] for s in self.segments.segments], dtype=np.int64)
        return owner, self.live_rows - starts[owner]

    def _gather(
        self, owner: np.ndarray, local: np.ndarray, pointer: str, columns: Sequence[str]
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Each live row's CSR slice (``pointer`` and ``columns`` of its owning segment)
        laid end to end: pointers, columns, and each entry's segment and source position."""
        segments = self.segments.segments
        lengths = np.zeros(self.n_live, dtype=np.int64)
        for i, segment in enumerate(segments):
            mine = owner == i
            ptr = np.asarray(segment[pointer])
            lengths[mine] = ptr[local[mine] + 1] - ptr[local[mine]]
        indptr = np.zeros(self.n_live + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        total = int(indptr[-1])
        out = {c: np.empty(total, dtype=segments[0][c].dtype) for c in columns} if segments else {}
        segment_of = np.empty(total, dtype=np.int32)
        entry_of = np.empty(total, dtype=np.int64)
        for i, segment in enumerate(segments):
            rows = np.flatnonzero(owner == i)
            if rows.size == 0:
                continue
            _, source = gather_csr(np.asarray(segment[pointer]), local[rows])
            _, target = gather_csr(indptr, rows)
            for c in columns:
                out[c][target] = np.asarray(segment[c])[source]
            segment_of[target] = i
            entry_of[target] = source
        return indptr, out, segment_of, entry_of

    def _live_targets(
        self, indptr: np.ndarray, targets: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Targets as live positions, links to deleted rows dropped: new pointers, targets
        and the kept entries' mask."""
        mapped = self.positions[targets.astype(np.int64)]
        keep = mapped >= 0
        if keep.all():
            return indptr, mapped, keep
        sources = np.repeat(np.arange(self.n_live), np.diff(indptr))
        counts = np.bincount(sources[keep], minlength=self.n_live)
        new = np.zeros(self.n_live + 1, dtype=np.int64)
        np.cumsum(counts, out=new[1:])
        return new, mapped[keep], keep

    @cached_property
    def link_graph(self) -> LinkGraph:
        owner, local = self._owned("link")
        indptr, cols, segment_of, entry_of = self._gather(
            owner, local, "link.ptr", ["link.dst", "link.w"]
        )
        indptr, targets, keep = self._live_targets(indptr, cols.get("link.dst", np.zeros(0)))
        n = self.n_live
        weights = sparse.csr_matrix(
            (cols.get("link.w", np.zeros(0))[keep], targets.astype(np.int32), indptr), shape=(n, n)
        )
        in_links = np.bincount(weights.indices, minlength=n)
        contexts = LinkContexts(
            weights.indptr,
            weights.indices,
            segment_of[keep],
            entry_of[keep],
            self.segments.segments,
            lambda position: self.segments.string("texts", int(self.live_rows[position])),
            self.settings.context_window,
        )
        return LinkGraph(weights, specificity(in_links, n), contexts)

    @cached_property
    def entity_graph(self) -> EntityGraph:
        n = self.n_live
        owner, local = self._home()
        indptr, cols, _, _ = self._gather(owner, local, "ment.ptr", ["ment.ent"])
        flat = cols.get("ment.ent", np.zeros(0, dtype=np.int32)).astype(np.int64)
        segments = self.segments.segments
        n_entities = self.segments.n_entities
        if (
            len(segments) == 1
            and self.n_live == self.segments.n_rows
            and segments[0].entities == (0, n_entities)
        ):
            # one segment, nothing deleted (a build or a compaction): its entities were
            # numbered by first mention when written, so no sort is needed
            order = np.arange(n_entities, dtype=np.int64)
        else:
            unique, first = np.unique(flat, return_index=True)
            order = unique[np.argsort(first, kind="stable")]
        number = np.full(n_entities, -1, dtype=np.int32)
        number[order] = np.arange(len(order), dtype=np.int32)
        mentions = sparse.csr_matrix(
            (np.ones(len(flat)), number[flat].astype(np.int32), indptr), shape=(n, len(order))
        )
        mentions.sort_indices()
        g_owner, g_local = self._owned("glink")
        g_indptr, g_cols, _, _ = self._gather(g_owner, g_local, "glink.ptr", ["glink.dst"])
        g_indptr, g_targets, _ = self._live_targets(g_indptr, g_cols.get("glink.dst", np.zeros(0)))
        title_links = sparse.csr_matrix(
            (np.ones(len(g_targets)), g_targets.astype(np.int32), g_indptr), shape=(n, n)
        )
        names = EntityNames(self.segments, order)
        return StoredEntityGraph(
            self.passage_ids,
            names,
            mentions,
            title_links,
            sparse.csr_matrix((len(order), len(order))),
            f"corpus-index:{self.root}:v{self.version}",
            {
                "extractor": self.extractor_name,
                "encoder": None,
                "max_title_words": self.settings.graph_max_title_words,
            },
            id_positions=self.id_positions,
            entity_numbers=EntityNumbers(names, number),
        )
