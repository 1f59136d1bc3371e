"""Read-side objects over a snapshot: the live passages as a corpus, the segmented dense
search, the stored link contexts.

- :class:`IndexCorpus` is a :class:`~rag_multihop.corpus.Corpus` whose passages are read
  from the memory-mapped string columns on demand (no passage objects built at open);
- :class:`SegmentedDenseIndex` answers ``search`` like
  :class:`~rag_multihop.index.dense.DenseIndex`: each segment's FAISS index (exact flat, or
  the ANN stored in the segment) is searched for ``k`` of its live rows (the dead ones
  skipped inside FAISS) and the lists merged by score, so a flat search equals one FAISS
  search over the live passages;
- :class:`LinkContexts` maps a link ``(source, target)`` to its context stems, read from
  the name spans the segment that stored the link keeps and the source's text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from rag_multihop.corpus import Corpus
from rag_multihop.index.ann import make_ann_index
from rag_multihop.index.dense import SMALL_SEARCH, DenseIndex, faiss_threads
from rag_multihop.multihop.links import may_share_stems, text_stems, window_context
from rag_multihop.multihop.scoring import context_overlap
from rag_multihop.store.segment import Segment
from rag_multihop.store.tables import unpack_string
from rag_multihop.store.texts import text_at
from rag_multihop.store.views import SegmentSet
from rag_multihop.types import Passage
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize

if TYPE_CHECKING:
    from rag_multihop.store.snapshot import IndexSnapshot


class IndexCorpus(Corpus):
    """The live passages of a snapshot, in index order (a read-only :class:`Corpus`)."""

    def __init__(self, snapshot: IndexSnapshot) -> None:  # no Corpus.__init__: nothing loaded
        self._snapshot = snapshot

    def __len__(self) -> int:
        return self._snapshot.n_live

    def __iter__(self) -> Iterator[Passage]:
        return (self._passage(i) for i in range(len(self)))

    @overload
    def __getitem__(self, key: int | str) -> Passage: ...

    @overload
    def __getitem__(self, key: slice) -> tuple[Passage, ...]: ...

    def __getitem__(self, key: int | str | slice) -> Passage | tuple[Passage, ...]:
        if isinstance(key, str):
            return self._passage(self.index_of(key))
        if isinstance(key, slice):
            return tuple(self._passage(i) for i in range(*key.indices(len(self))))
        position = int(key)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(f"passage position {key} out of range for {len(self)} passages")
        return self._passage(position)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, Passage):
            key = key.id
        return isinstance(key, str) and key in self._by_id

    @property
    def _by_id(self) -> Mapping[str, int]:
        return self._snapshot.id_positions

    @property
    def ids(self) -> list[str]:
        return list(self._snapshot.passage_ids)

    def index_of(self, passage_id: str) -> int:
        try:
            return self._by_id[passage_id]
        except KeyError:
            raise KeyError(f"unknown passage id {passage_id!r}") from None

    def texts(self) -> list[str]:
        return [p.embedding_text for p in self]

    def _passage(self, position: int) -> Passage:
        row = int(self._snapshot.live_rows[position])
        view = self._snapshot.segments
        segment, local = view.locate(row)
        passage_id = unpack_string(segment["ids.blob"], segment["ids.off"], local)
        self._snapshot.passage_ids.remember(passage_id, position)
        return Passage(
            passage_id,
            text_at(segment.arrays, local),
            unpack_string(segment["titles.blob"], segment["titles.off"], local),
        )


class LiveVectors:
    """The live passages' unit vectors by position, read from the segments' memory maps at
    the positions asked (a version with several segments or deleted rows; nothing copied at
    open). Indexing by an int, a slice, or a list or array of positions (or a boolean mask)
    gives what the same index of the ``(n_live, dim)`` matrix gives; ``np.asarray`` makes
    that whole matrix."""

    def __init__(self, segments: SegmentSet, live_rows: np.ndarray, dim: int) -> None:
        self._segments = segments.segments
        self._rows = live_rows
        self._starts = np.array([s.rows[0] for s in self._segments], dtype=np.int64)
        self._ends = np.array([s.rows[1] for s in self._segments], dtype=np.int64)
        self.shape = (int(live_rows.shape[0]), int(dim))
        self.dtype = np.dtype(np.float32)
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, (int, np.integer)):
            return self[np.array([key])][0]
        if isinstance(key, slice):
            positions = np.arange(self.shape[0])[key]
        else:
            positions = np.asarray(key)
            if positions.dtype == bool:
                positions = np.flatnonzero(positions)
            positions = positions.astype(np.int64, copy=False)
        rows = self._rows[positions]
        if len(self._segments) == 1:  # one segment: one gather (a query asks ~40 times)
            vectors = self._segments[0]["vectors"][rows - self._starts[0]]
            return np.asarray(vectors, dtype=np.float32)
        owner = np.searchsorted(self._ends, rows, side="right")
        out = np.empty((*rows.shape, self.shape[1]), dtype=np.float32)
        for i in np.unique(owner).tolist():
            mine = owner == i
            out[mine] = self._segments[i]["vectors"][rows[mine] - self._starts[i]]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[np.arange(self.shape[0])]
        return whole if dtype is None else whole.astype(dtype)


DEFAULT_EF_SEARCH = 128
"""HNSW's ``efSearch`` (candidates kept while walking the graph; at least ``k`` is used)."""


class SegmentedDenseIndex(DenseIndex):
    """Dense search over a snapshot's segments (:class:`DenseIndex`'s search; it is saved
    as part of its index, so :meth:`save` refuses).

    A segment's deleted rows are skipped inside FAISS (an ``IDSelectorBitmap`` of its live
    rows), so a search asks each segment for ``k`` whatever was deleted. ``ef_search`` sets
    an HNSW segment's ``efSearch`` (recall against time; :data:`DEFAULT_EF_SEARCH`).
    """

    def __init__(
        self, snapshot: IndexSnapshot, *, ef_search: int = DEFAULT_EF_SEARCH
    ) -> None:  # no DenseIndex.__init__: no one index
        import faiss  # deferred: importing FAISS costs ~0.3 s

        self._faiss = faiss
        self._snapshot = snapshot
        self._dim = snapshot.dim
        self.factory = self.requested_factory = snapshot.settings.ann
        self.normalize = True
        self.ef_search = check_positive_int(ef_search, "ef_search")
        self._parts: list[_Part] = []
        alive = snapshot.segments.alive
        for segment in snapshot.segments.segments:
            start, end = segment.rows
            live = alive[start:end]
            if not live.any():
                continue
            ann = _segment_ann(segment)
            hnsw = isinstance(faiss.downcast_index(ann), faiss.IndexHNSW)
            part = _Part(ann, start, live, hnsw)
            if not live.all():
                part.bits = np.packbits(live, bitorder="little")
                part.selector = faiss.IDSelectorBitmap(len(live), faiss.swig_ptr(part.bits))
                if not self._filters(part):  # FAISS filters no rows of this kind
                    part.selector, part.extra = None, int(len(live) - live.sum())
            self._parts.append(part)

    def _params(self, part: _Part, k: int, held: list[Any]) -> Any:
        """FAISS search parameters of ``part``'s index: its live-row selector and an HNSW's
        ``efSearch`` (``None`` when it needs neither), nested through the indexes that wrap
        the one that searches (:func:`_search_params`)."""
        if part.selector is None and not part.hnsw:
            return None
        ef_search = max(self.ef_search, k)
        return _search_params(self._faiss, part.ann, part.selector, ef_search, held)

    def _filters(self, part: _Part) -> bool:
        """Whether FAISS takes ``part``'s selector (a product quantizer, an additive one or a
        fast-scan index refuse one: their dead rows are then over-fetched and dropped)."""
        held: list[Any] = []
        query = np.zeros((1, self.dim), dtype=np.float32)
        try:
            part.ann.search(query, 1, params=self._params(part, 1, held))
        except RuntimeError:
            return False
        return True

    @property
    def ids(self) -> Sequence[str]:  # type: ignore[override]
        return self._snapshot.passage_ids

    def save(self, directory: object) -> None:
        raise TypeError(
            "a SegmentedDenseIndex is part of a CorpusIndex and saved with it; save a "
            "DenseIndex.build(...) instead"
        )

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return self._snapshot.n_live

    def search(self, queries: np.ndarray, k: int) -> tuple[list[np.ndarray], list[list[str]]]:
        """Scores and ids per query, best first, at most ``min(k, len(self))`` each."""
        scores, positions = self.search_positions(queries, k)
        ids = self._snapshot.passage_ids
        return scores, [[ids[p] for p in row.tolist()] for row in positions]

    def search_positions(
        self, queries: np.ndarray, k: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """:meth:`search` with the live positions of the hits instead of their ids."""
        k = check_positive_int(k, "k")
        matrix = l2_normalize(as_embedding_matrix(queries, name="query vectors", dim=self.dim))
        k = min(k, len(self))
        positions = self._snapshot.positions
        found: list[list[tuple[float, int]]] = [[] for _ in range(len(matrix))]
        with faiss_threads(1 if len(matrix) <= SMALL_SEARCH else None):
            for part in self._parts:
                held: list[Any] = []
                depth = min(k + part.extra, len(part.alive))
                params = self._params(part, k, held)
                scores, local = part.ann.search(matrix, depth, params=params)
                for q in range(len(matrix)):
                    keep = local[q] >= 0
                    rows, values = local[q][keep], scores[q][keep]
                    live = part.alive[rows]
                    found[q].extend(
                        zip(values[live].tolist(), (rows[live] + part.start).tolist(), strict=True)
                    )
        out_scores, out_positions = [], []
        for hits in found:
            hits.sort(key=lambda hit: (-hit[0], hit[1]))
            best = hits[:k]
            out_scores.append(np.array([s for s, _ in best], dtype=np.float32))
            out_positions.append(positions[np.array([row for _, row in best], dtype=np.int64)])
        return out_scores, out_positions


@dataclass(eq=False)
class _Part:
    """A segment's searchable index: ``ann`` over its rows from ``start``, ``alive`` its
    live-row mask, ``hnsw`` whether it searches with an ``efSearch``; ``selector`` (over
    ``bits``) skips its dead rows inside FAISS, or ``extra`` more rows are fetched when its
    kind takes no selector."""

    ann: Any
    start: int
    alive: np.ndarray
    hnsw: bool
    selector: Any = None
    bits: np.ndarray | None = None
    extra: int = 0


def _search_params(faiss: Any, index: Any, sel: Any, ef_search: int, held: list[Any]) -> Any:
    """The FAISS search parameters of ``index`` that apply ``sel`` (``None``: every row):
    IVF's (with its own ``nprobe``), HNSW's (``ef_search``) or plain ones, nested in a
    pre-transform's or a refine's when ``index`` wraps another (FAISS refuses parameters of
    another kind). ``held`` keeps the nested objects alive for the search."""
    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexPreTransform):
        nested = _search_params(faiss, inner.index, sel, ef_search, held)
        held.append(nested)
        return faiss.SearchParametersPreTransform(index_params=nested)
    if isinstance(inner, faiss.IndexRefine):
        nested = _search_params(faiss, inner.base_index, sel, ef_search, held)
        held.append(nested)
        return faiss.IndexRefineSearchParameters(base_index_params=nested, k_factor=inner.k_factor)
    if isinstance(inner, faiss.IndexIVF):
        return faiss.SearchParametersIVF(sel=sel, nprobe=inner.nprobe, max_codes=inner.max_codes)
    if isinstance(inner, faiss.IndexHNSW):
        return faiss.SearchParametersHNSW(sel=sel, efSearch=ef_search)
    return faiss.SearchParameters(sel=sel)


def _segment_ann(segment: Segment) -> Any:
    """The segment's stored ANN, or an exact inner-product index over its vectors."""
    if segment.ann is not None:
        return segment.ann
    return make_ann_index(np.ascontiguousarray(segment["vectors"], dtype=np.float32), "flat")


class LinkContexts(Mapping[tuple[int, int], frozenset[str]]):
    """``(source, target)`` (live positions) → the stems around the target's name in the
    source: the name spans stored with the link (by the segment that stored it), read
    against the source's tokens (:func:`~rag_multihop.multihop.links.span_context`; the
    last 4,096 sources' texts and token stems are cached, as a query asks about the same
    source repeatedly). :meth:`overlaps` skips the tokens of a source whose text cannot
    hold a question's stems."""

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        segment_of: np.ndarray,
        entry_of: np.ndarray,
        segments: Sequence[Segment],
        text_of: Callable[[int], str],
        window: int,
    ) -> None:
        self._indptr, self._indices = indptr, indices
        self._segment_of, self._entry_of = segment_of, entry_of
        self._segments = segments
        self._window = window
        self._text = lru_cache(maxsize=4096)(text_of)
        self._stems = lru_cache(maxsize=4096)(lambda source: text_stems(self._text(source)))

    @cached_property
    def _span_pointers(self) -> list[np.ndarray]:
        """Per segment, where each stored link's spans start in its ``link.span``."""
        out = []
        for segment in self._segments:
            counts = np.asarray(segment["link.nspan"], dtype=np.int64)
            pointers = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=pointers[1:])
            out.append(pointers)
        return out

    def __getitem__(self, key: tuple[int, int]) -> frozenset[str]:
        source, target = key
        return window_context(self._stems(source), self._spans(source, target), self._window)

    def overlaps(self, source: int, targets: Sequence[int], question: frozenset[str]) -> np.ndarray:
        """:func:`~rag_multihop.multihop.scoring.context_overlap` of ``question`` with
        each link ``source`` → ``targets`` (zeros, without tokenising, when the source's
        text cannot hold a stem of ``question``: :func:`~rag_multihop.multihop.links.
        may_share_stems`)."""
        if not may_share_stems(self._text(source), question):
            return np.zeros(len(targets))
        return np.array([context_overlap(question, self[source, t]) for t in targets])

    def _spans(self, source: int, target: int) -> list[list[int]]:
        """The stored name spans of the link ``source`` → ``target``."""
        start, end = int(self._indptr[source]), int(self._indptr[source + 1])
        j = start + bisect_left(self._indices[start:end].tolist(), target)
        if j >= end or self._indices[j] != target:
            raise KeyError((source, target))
        i, entry = int(self._segment_of[j]), int(self._entry_of[j])
        pointers = self._span_pointers[i]
        spans: list[list[int]] = self._segments[i]["link.span"][
            pointers[entry] : pointers[entry + 1]
        ].tolist()
        return spans

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for source in range(len(self._indptr) - 1):
            for target in self._indices[self._indptr[source] : self._indptr[source + 1]].tolist():
                yield source, target

    def __len__(self) -> int:
        return int(self._indptr[-1])
