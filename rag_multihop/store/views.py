"""Look-ups across the segments of one version: ids, titles, names, pieces, entities.

A :class:`SegmentSet` is the segments of a version and the mask of live rows (global rows:
every passage ever added has one; deleted ones are dead). Every look-up is a binary search
per segment over memory-mapped arrays; nothing is loaded into Python dicts.
:class:`StoredTitleIndex` is a :class:`~rag_multihop.multihop.titles.TitleIndex` whose
dictionary is those arrays, so title matching runs the same code as an in-memory build.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rag_multihop.multihop.titles import TitleIndex
from rag_multihop.store.segment import Segment
from rag_multihop.store.tables import contains, key_hash, lookup, unpack_string

QUALIFIER_SEPARATOR = "\x1f"


@dataclass(frozen=True, eq=False)
class SegmentSet:
    """The segments of one version (in row order) and which global rows are live."""

    segments: Sequence[Segment]
    alive: np.ndarray

    @cached_property
    def row_starts(self) -> np.ndarray:
        return np.array([s.rows[0] for s in self.segments], dtype=np.int64)

    @property
    def n_rows(self) -> int:
        return int(self.alive.shape[0])

    @property
    def n_entities(self) -> int:
        return max((s.entities[1] for s in self.segments), default=0)

    def locate(self, row: int) -> tuple[Segment, int]:
        """The segment holding global ``row`` and the row's position in it."""
        i = int(np.searchsorted(self.row_starts, row, side="right")) - 1
        while self.segments[i].rows[1] <= row:  # segments that add no rows share a start
            i += 1
        segment = self.segments[i]
        return segment, row - segment.rows[0]

    def string(self, column: str, row: int) -> str:
        """``column`` (``ids``, ``titles`` or ``texts``) of global ``row``."""
        segment, local = self.locate(row)
        return unpack_string(segment[f"{column}.blob"], segment[f"{column}.off"], local)

    def vector(self, row: int) -> np.ndarray:
        segment, local = self.locate(row)
        return np.asarray(segment["vectors"][local])

    def row_of(self, passage_id: str) -> int | None:
        """The live global row of ``passage_id`` (``None`` when absent or deleted)."""
        h = key_hash(passage_id)
        for segment in reversed(self.segments):
            for row in lookup(segment.table("id"), h).tolist():
                if self.alive[row] and self.string("ids", row) == passage_id:
                    return int(row)
        return None

    def _values(self, prefix: str, key: str) -> list[np.ndarray]:
        h = key_hash(key)
        return [lookup(s.table(prefix), h) for s in self.segments]

    def rows_with_key(self, key: str) -> np.ndarray:
        """Live rows whose entity-graph title key is ``key``, ascending."""
        rows = np.concatenate([np.asarray(v, dtype=np.int64) for v in self._values("gkey", key)])
        return rows[self.alive[rows]]

    def rows_with_piece(self, piece: str) -> np.ndarray:
        """Live rows whose text holds the word ``piece`` (normalised), ascending."""
        rows = np.concatenate([np.asarray(v, dtype=np.int64) for v in self._values("piece", piece)])
        return rows[self.alive[rows]] if rows.size else rows

    def rows_with_pieces(self, pieces: Sequence[str]) -> np.ndarray:
        """Live rows whose text holds every one of ``pieces`` (an intersection of postings)."""
        found: np.ndarray | None = None
        for piece in sorted(set(pieces), key=len, reverse=True):
            rows = self.rows_with_piece(piece)
            found = rows if found is None else np.intersect1d(found, rows, assume_unique=True)
            if found.size == 0:
                break
        return np.zeros(0, dtype=np.int64) if found is None else found

    def title_postings(self, key: str) -> list[tuple[int, tuple[str, ...]]]:
        """``(live row, qualifiers)`` of every title recognised by ``key``, ascending rows."""
        out: list[tuple[int, tuple[str, ...]]] = []
        h = key_hash(key)
        for segment in self.segments:
            postings = lookup(segment.table("title"), h)
            for p in postings.tolist():
                row = int(segment["title.row"][p])
                if self.alive[row]:
                    text = unpack_string(segment["title.qual.blob"], segment["title.qual.off"], p)
                    out.append((row, tuple(text.split(QUALIFIER_SEPARATOR)) if text else ()))
        return out

    def has_first_word(self, token: str) -> bool:
        h = key_hash(token)
        return any(contains(s["first.hash"], h) for s in self.segments)

    def entity_of(self, name: str) -> int | None:
        """The global entity number of ``name`` (``None`` when no segment interned it)."""
        h = key_hash(name)
        for segment in self.segments:
            found = lookup(segment.table("ent"), h)
            if found.size:
                return int(found[0])
        return None


class _FirstWords:
    """``token in first_words`` over the segments' first-word hashes."""

    def __init__(self, segments: SegmentSet) -> None:
        self._segments = segments

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self._segments.has_first_word(token)


class _TitleKeys(Mapping[str, list[tuple[int, tuple[str, ...]]]]):
    """``key -> [(row, qualifiers)]`` of live titles, rows mapped by ``positions``; a key
    whose titles are all deleted is absent, as in a fresh build."""

    def __init__(self, segments: SegmentSet, positions: np.ndarray | None) -> None:
        self._segments = segments
        self._positions = positions

    def __getitem__(self, key: str) -> list[tuple[int, tuple[str, ...]]]:
        found = self._segments.title_postings(key)
        if not found:
            raise KeyError(key)
        if self._positions is None:
            return found
        return [(int(self._positions[row]), quals) for row, quals in found]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(self._segments.title_postings(key))

    def __iter__(self) -> Iterator[str]:
        raise TypeError(
            "a stored title index keeps key hashes, not key strings; it cannot list its keys"
        )

    def __len__(self) -> int:
        raise TypeError("a stored title index does not count its keys")


class StoredTitleIndex(TitleIndex):
    """A :class:`TitleIndex` over an index's segments (same matching code, no dict).

    Args:
        segments: the version's segments and live mask.
        size: the number of passages its rows index (the live passages when ``positions``
            is given, every global row otherwise).
        positions: global row → the row number to report (``-1`` for dead rows); ``None``
            reports global rows.
        max_words: the longest title looked for.
    """

    def __init__(
        self,
        segments: SegmentSet,
        *,
        size: int,
        positions: np.ndarray | None,
        max_words: int,
    ) -> None:
        self.max_words = max_words
        self._by_key = _TitleKeys(segments, positions)  # type: ignore[assignment]
        self._first_words = _FirstWords(segments)  # type: ignore[assignment]
        self.size = size
