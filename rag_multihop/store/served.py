"""The serving arrays of a version: what a query reads beyond the segments, in the live
passages' numbering, computed once when the version is committed.

A query needs the title links, the entity graph, the shared-entity postings and the walk
the graph PPR pushes along, all over the live passages numbered in index order (the
numbering a fresh in-memory build has). Each segment stores only what its write changed,
so those structures are gathered from every segment (the latest links of each live row,
targets mapped to live positions, links to deleted rows dropped, entities renumbered by
first live mention, the walk's row-stochastic adjacency): linear in the corpus, seconds
at a million passages. :func:`serving_arrays` does it once, for the writer, over the new
version; the arrays are written beside the segments (``segments/w-<version>-<hex>/``,
listed in the manifest as ``"serving"``) and a reader maps them: opening and the first
query gather nothing.

Arrays (CSR pointers and indices share one integer type, int32 below 2**31 entries, so
scipy wraps the maps without copying them):

| arrays | what |
|---|---|
| ``link.ptr/.dst/.w`` | title links (float64 weights, as stored) |
| ``link.seg/.entry`` | per link, the segment (manifest order) and entry that stored its spans |
| ``link.in`` | live in-links per passage (the specificity's counts) |
| ``ment.ptr/.ent``, ``ent.order`` | mentions over live entity numbers; each one's global number |
| ``pass.ptr/.row`` | entity → the passages mentioning it (the mentions transposed) |
| ``glink.ptr/.dst`` | the entity graph's title links |
| ``walk.ptr/.dst/.p`` | the walk ``D^-1 A`` for the default edge weights (float64) |
| ``walk.dangling`` | the walk's nodes without out-edges |
| ``subject.pos`` | the passages known by subjects read from their text |
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
from scipy import sparse

from rag_multihop.graph.build import EdgeWeights, walk_adjacency
from rag_multihop.graph.push import PushGraph
from rag_multihop.store.segment import Segment
from rag_multihop.store.tables import gather_csr
from rag_multihop.store.views import SegmentSet

INT32_LIMIT = 2**31 - 1


class LiveRows:
    """The live rows of a :class:`SegmentSet` and their positions (the numbering served)."""

    def __init__(self, segments: SegmentSet) -> None:
        self.segments = segments
        self.rows = np.flatnonzero(segments.alive)
        self.positions = np.full(segments.n_rows, -1, dtype=np.int64)
        self.positions[self.rows] = np.arange(len(self.rows))

    @property
    def n(self) -> int:
        return int(self.rows.shape[0])

    def owned(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """Per live row, the segment whose ``<prefix>.rows`` defined it last and the row's
        place in that segment's table."""
        owner = np.full(self.segments.n_rows, -1, dtype=np.int64)
        local = np.full(self.segments.n_rows, -1, dtype=np.int64)
        for i, segment in enumerate(self.segments.segments):
            rows = np.asarray(segment[f"{prefix}.rows"], dtype=np.int64)
            owner[rows] = i
            local[rows] = np.arange(len(rows))
        return owner[self.rows], local[self.rows]

    def home(self) -> tuple[np.ndarray, np.ndarray]:
        """Per live row, the segment that added it and the row's place in it."""
        segments = self.segments.segments
        ends = np.array([s.rows[1] for s in segments], dtype=np.int64)
        owner = np.searchsorted(ends, self.rows, side="right")
        starts = np.array([s.rows[0] for s in segments], dtype=np.int64)
        return owner, self.rows - starts[owner]

    def gather(
        self, owner: np.ndarray, local: np.ndarray, pointer: str, columns: Sequence[str]
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Each live row's CSR slice (``pointer`` and ``columns`` of its owning segment)
        laid end to end: pointers, columns, and each entry's segment and source position."""
        segments: Sequence[Segment] = self.segments.segments
        lengths = np.zeros(self.n, dtype=np.int64)
        for i, segment in enumerate(segments):
            mine = owner == i
            ptr = np.asarray(segment[pointer])
            lengths[mine] = ptr[local[mine] + 1] - ptr[local[mine]]
        indptr = np.zeros(self.n + 1, dtype=np.int64)
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

    def live_targets(
        self, indptr: np.ndarray, targets: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Targets as live positions, links to deleted rows dropped: new pointers, targets
        and the kept entries' mask."""
        mapped = self.positions[targets.astype(np.int64)]
        keep = mapped >= 0
        if keep.all():
            return indptr, mapped, keep
        sources = np.repeat(np.arange(self.n), np.diff(indptr))
        counts = np.bincount(sources[keep], minlength=self.n)
        new = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(counts, out=new[1:])
        return new, mapped[keep], keep


def first_occurrence_order(values: np.ndarray, size: int) -> np.ndarray:
    """The distinct ``values`` (integers in ``[0, size)``) in the order they first occur,
    without sorting ``values`` (``np.unique`` with ``return_index`` sorts all of them).

    >>> first_occurrence_order(np.array([4, 1, 4, 0, 1]), 5).tolist()
    [4, 1, 0]
    """
    first = np.full(size, len(values), dtype=np.int64)
    np.minimum.at(first, values, np.arange(len(values)))
    occurs = np.zeros(len(values), dtype=bool)
    occurs[first[first < len(values)]] = True
    return np.asarray(values[occurs], dtype=np.int64)


def _csr(
    prefix: str, index: str, indptr: np.ndarray, indices: np.ndarray
) -> list[tuple[str, np.ndarray]]:
    """``<prefix>.ptr`` and ``<prefix>.<index>`` in one integer type (int32 when both fit)."""
    fits = int(indptr[-1]) <= INT32_LIMIT and len(indptr) <= INT32_LIMIT
    dtype = np.int32 if fits else np.int64
    return [
        (f"{prefix}.ptr", np.asarray(indptr, dtype=dtype)),
        (f"{prefix}.{index}", np.asarray(indices, dtype=dtype)),
    ]


def serving_arrays(segments: SegmentSet) -> dict[str, np.ndarray]:
    """The serving arrays of the version ``segments`` make (see the module docstring)."""
    return dict(iter_serving_arrays(segments))


def iter_serving_arrays(segments: SegmentSet) -> Iterator[tuple[str, np.ndarray]]:
    """:func:`serving_arrays` one array at a time, each as soon as it is made (a writer
    saves one while the next is computed), the largest (the walk's) first."""
    live = LiveRows(segments)
    yield from _graph_arrays(live)
    yield from _link_arrays(live)


def _graph_arrays(live: LiveRows) -> Iterator[tuple[str, np.ndarray]]:
    """The walk, the entity graph's title links, the mentions both ways, the subjects."""
    segments = live.segments
    n = live.n
    owner, local = live.home()
    m_ptr, m_cols, _, _ = live.gather(owner, local, "ment.ptr", ["ment.ent"])
    flat = m_cols.get("ment.ent", np.zeros(0, dtype=np.int32)).astype(np.int64)
    del m_cols
    n_entities = segments.n_entities
    only = segments.segments
    if len(only) == 1 and n == segments.n_rows and only[0].entities == (0, n_entities):
        # one segment, nothing deleted (a build or a compaction): its entities were
        # numbered by first mention when written, so no sort is needed
        order = np.arange(n_entities, dtype=np.int64)
    else:
        order = first_occurrence_order(flat, n_entities)
    number = np.full(n_entities, -1, dtype=np.int64)
    number[order] = np.arange(len(order))
    mentions = sparse.csr_matrix((np.ones(len(flat)), number[flat], m_ptr), shape=(n, len(order)))
    del flat, number
    mentions.sort_indices()

    g_owner, g_local = live.owned("glink")
    g_ptr, g_cols, _, _ = live.gather(g_owner, g_local, "glink.ptr", ["glink.dst"])
    g_ptr, g_targets, _ = live.live_targets(g_ptr, g_cols.get("glink.dst", np.zeros(0)))
    title_links = sparse.csr_matrix((np.ones(len(g_targets)), g_targets, g_ptr), shape=(n, n))
    title_links.sort_indices()
    synonyms = sparse.csr_matrix((len(order), len(order)))
    passages_of = mentions.T.tocsr()  # the walk's entity → passage block and ``pass.*``
    walk = PushGraph.from_adjacency(
        walk_adjacency(mentions, title_links, synonyms, EdgeWeights(), mentioned_by=passages_of)
    )
    yield from _csr("walk", "dst", walk.forward.indptr, walk.forward.indices)
    yield "walk.p", np.asarray(walk.forward.data, dtype=np.float64)
    yield "walk.dangling", np.asarray(walk.dangling, dtype=bool)
    del walk
    yield from _csr("glink", "dst", title_links.indptr, title_links.indices)
    yield from _csr("ment", "ent", mentions.indptr, mentions.indices)
    yield "ent.order", order
    yield from _csr("pass", "row", passages_of.indptr, passages_of.indices)
    del passages_of, mentions, title_links

    flags = np.zeros(n, dtype=bool)
    for i, segment in enumerate(only):
        mine = owner == i
        if mine.any():
            flags[mine] = np.asarray(segment["subject"])[local[mine]] > 0
    yield "subject.pos", np.flatnonzero(flags).astype(np.int32)


def _link_arrays(live: LiveRows) -> list[tuple[str, np.ndarray]]:
    """The title links of the live passages, their entries' origins and in-link counts."""
    owner, local = live.owned("link")
    indptr, cols, segment_of, entry_of = live.gather(
        owner, local, "link.ptr", ["link.dst", "link.w"]
    )
    indptr, targets, keep = live.live_targets(indptr, cols.get("link.dst", np.zeros(0)))
    return [
        *_csr("link", "dst", indptr, targets),
        ("link.w", np.asarray(cols.get("link.w", np.zeros(0))[keep], dtype=np.float64)),
        ("link.seg", segment_of[keep].astype(np.int32)),
        ("link.entry", entry_of[keep]),
        ("link.in", np.bincount(targets, minlength=live.n).astype(np.int32)),
    ]


def csr(
    arrays: Mapping[str, np.ndarray],
    prefix: str,
    index: str,
    shape: tuple[int, int],
    data: np.ndarray | None = None,
) -> sparse.csr_matrix:
    """The CSR matrix ``<prefix>.ptr`` / ``<prefix>.<index>`` (ones unless ``data``), over
    the arrays themselves (no copy; their indices are sorted)."""
    indptr, indices = arrays[f"{prefix}.ptr"], arrays[f"{prefix}.{index}"]
    values = np.ones(len(indices)) if data is None else data
    matrix = sparse.csr_matrix((values, indices, indptr), shape=shape, copy=False)
    matrix.has_sorted_indices = True
    return matrix


def push_graph(arrays: Mapping[str, np.ndarray], n_nodes: int) -> PushGraph:
    """The stored walk as a :class:`PushGraph` (its matrix over the memory maps)."""
    forward = csr(arrays, "walk", "dst", (n_nodes, n_nodes), data=arrays["walk.p"])
    degree_floor = np.maximum(np.diff(arrays["walk.ptr"]), 1).astype(np.float64)
    return PushGraph(forward, degree_floor, arrays["walk.dangling"])
