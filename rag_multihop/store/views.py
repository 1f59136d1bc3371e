"""Look-ups across the segments of one version: ids, titles, names, pieces, entities.

A :class:`SegmentSet` is the segments of a version and the mask of live rows (global rows:
every passage ever added has one; deleted ones are dead). Every look-up is a binary search
per segment over memory-mapped arrays; nothing is loaded into Python dicts.
:class:`StoredTitleIndex` is a :class:`~rag_multihop.multihop.titles.TitleIndex` whose
dictionary is those arrays, so title matching runs the same code as an in-memory build.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rag_multihop.graph.build import title_link_keys, title_link_targets
from rag_multihop.multihop.titles import TitleIndex, title_tokens
from rag_multihop.store.segment import Segment
from rag_multihop.store.tables import contains, key_hash, key_hashes, lookup, unpack_string
from rag_multihop.store.texts import text_at

QUALIFIER_SEPARATOR = "\x1f"


@dataclass(frozen=True, eq=False)
class SegmentSet:
    """The segments of one version (in row order) and which global rows are live."""

    segments: Sequence[Segment]
    alive: np.ndarray

    @cached_property
    def row_starts(self) -> list[int]:
        """Each segment's first global row (a list: one row's :meth:`locate` is a
        ``bisect``, several times cheaper than a numpy search of one value)."""
        return [s.rows[0] for s in self.segments]

    @property
    def n_rows(self) -> int:
        return int(self.alive.shape[0])

    @property
    def n_entities(self) -> int:
        return max((s.entities[1] for s in self.segments), default=0)

    def locate(self, row: int) -> tuple[Segment, int]:
        """The segment holding global ``row`` and the row's position in it."""
        i = bisect_right(self.row_starts, row) - 1
        while self.segments[i].rows[1] <= row:  # segments that add no rows share a start
            i += 1
        segment = self.segments[i]
        return segment, row - segment.rows[0]

    def string(self, column: str, row: int) -> str:
        """``column`` (``ids``, ``titles``, ``texts`` or ``names``: the passage's names
        joined by ``QUALIFIER_SEPARATOR``) of global ``row``."""
        segment, local = self.locate(row)
        if column == "texts":  # deflated in a large segment
            return text_at(segment.arrays, local)
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

    def rows_of(self, passage_ids: Sequence[str]) -> list[int | None]:
        """:meth:`row_of` of each id: one vectorised search per segment for the whole batch
        (a write's look-up of thousands of ids)."""
        found: list[int | None] = [None] * len(passage_ids)
        hashes = key_hashes(passage_ids)
        for segment in reversed(self.segments):
            table = segment.table("id")
            if table.size == 0:
                continue
            slots = np.minimum(np.searchsorted(table.hashes, hashes), table.size - 1)
            for number in np.flatnonzero(table.hashes[slots] == hashes).tolist():
                if found[number] is not None:
                    continue
                start, end = table.pointers[slots[number]], table.pointers[slots[number] + 1]
                for row in table.values[start:end].tolist():
                    if self.alive[row] and self.string("ids", row) == passage_ids[number]:
                        found[number] = int(row)
                        break
        return found

    def _values(self, prefix: str, key: str) -> list[np.ndarray]:
        h = key_hash(key)
        return [lookup(s.table(prefix), h) for s in self.segments]

    def rows_with_key(self, key: str) -> np.ndarray:
        """Live rows whose entity-graph title key is ``key``, ascending."""
        rows = np.concatenate([np.asarray(v, dtype=np.int64) for v in self._values("gkey", key)])
        return rows[self.alive[rows]]

    def rows_with_pieces(self, pieces: Sequence[str]) -> np.ndarray:
        """Live rows whose text holds every one of ``pieces`` (an intersection of postings,
        ascending): the shortest posting is looked up in each longer one by binary search."""
        postings = sorted((self._rows_of_piece(piece) for piece in set(pieces)), key=len)
        if not postings:
            return np.zeros(0, dtype=np.int64)
        found = postings[0]
        for rows in postings[1:]:  # none is empty while ``found`` is not: it is the shortest
            if found.size == 0:
                break
            slots = np.minimum(np.searchsorted(rows, found), rows.size - 1)
            found = found[rows[slots] == found]
        return found[self.alive[found]]

    def _rows_of_piece(self, piece: str) -> np.ndarray:
        """Every row (live or not) whose text holds ``piece``, ascending: the segments'
        postings in segment order."""
        return np.concatenate([np.asarray(v, dtype=np.int64) for v in self._values("piece", piece)])

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

    def _found(self, prefix: str, keys: Sequence[str]) -> Iterator[tuple[Segment, int, int]]:
        """``(segment, key number, table slot)`` of each of ``keys`` found in each segment's
        ``prefix`` table: one vectorised binary search per segment for the whole batch."""
        hashes = key_hashes(keys)
        for segment in self.segments:
            table = segment.table(prefix)
            if table.size == 0 or hashes.size == 0:
                continue
            slots = np.minimum(np.searchsorted(table.hashes, hashes), table.size - 1)
            for number in np.flatnonzero(table.hashes[slots] == hashes).tolist():
                yield segment, number, int(slots[number])

    def title_entries(self, keys: Sequence[str]) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
        """:meth:`title_postings` of many keys at once (keys without a live title left out)."""
        found: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for segment, number, slot in self._found("title", keys):
            table = segment.table("title")
            for p in table.values[table.pointers[slot] : table.pointers[slot + 1]].tolist():
                row = int(segment["title.row"][p])
                if self.alive[row]:
                    text = unpack_string(segment["title.qual.blob"], segment["title.qual.off"], p)
                    quals = tuple(text.split(QUALIFIER_SEPARATOR)) if text else ()
                    found.setdefault(keys[number], []).append((row, quals))
        return found

    def key_rows(self, keys: Sequence[str]) -> dict[str, list[int]]:
        """:meth:`rows_with_key` of many keys at once (keys without a live row left out)."""
        found: dict[str, list[int]] = {}
        for segment, number, slot in self._found("gkey", keys):
            table = segment.table("gkey")
            rows = np.asarray(table.values[table.pointers[slot] : table.pointers[slot + 1]])
            live = rows[self.alive[rows]].tolist()
            if live:
                found.setdefault(keys[number], []).extend(live)
        return found

    def first_words(self, tokens: Sequence[str]) -> set[str]:
        """Those of ``tokens`` that begin some title key."""
        hashes = key_hashes(tokens)
        present = np.zeros(len(tokens), dtype=bool)
        for segment in self.segments:
            table = segment["first.hash"]
            if table.shape[0]:
                slots = np.minimum(np.searchsorted(table, hashes), table.shape[0] - 1)
                present |= table[slots] == hashes
        return {token for token, keep in zip(tokens, present.tolist(), strict=True) if keep}

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


class PrefetchedTitleIndex(TitleIndex):
    """A :class:`TitleIndex` holding, in a dict, exactly the entries that ``texts`` can
    match, fetched from the segments with one batched search per segment: matching those
    texts against it equals matching them against the whole stored dictionary (a writer's
    look-ups for the passages whose links it recomputes); likewise for the entity graph's
    title keys (:meth:`graph_links`).
    """

    def __init__(
        self,
        segments: SegmentSet,
        texts: Sequence[str],
        *,
        max_words: int,
        graph_max_words: int,
    ) -> None:
        self.max_words = max_words
        self.size = segments.n_rows
        # each text is tokenised once: here, and for the matching that follows
        self._tokens = {text: title_tokens(text) for text in texts}
        capitalised = {
            token
            for pairs in self._tokens.values()
            for word, token in pairs
            if word[0].isupper() or word[0].isdigit()
        }
        self._first_words = frozenset(segments.first_words(sorted(capitalised)))
        keys: dict[str, None] = {}
        for pairs in self._tokens.values():
            tokens = [token for _, token in pairs]
            keys.update(dict.fromkeys(key for _, _, key in self.candidate_spans(pairs, tokens)))
        self._by_key = segments.title_entries(list(keys))
        self._graph_keys = {text: title_link_keys(text, graph_max_words) for text in texts}
        asked = dict.fromkeys(key for found in self._graph_keys.values() for key in found)
        self._graph_rows = segments.key_rows(list(asked))

    def graph_links(self, row: int, text: str) -> list[int]:
        """:func:`~rag_multihop.graph.build.passage_title_links` of passage ``row`` (one of
        the prefetched ``texts``) against the live entity-graph title keys."""
        graph_rows = self._graph_rows
        return title_link_targets(row, self._graph_keys[text], lambda key: graph_rows.get(key, ()))

    def tokens_of(self, text: str) -> list[tuple[str, str]]:
        pairs = self._tokens.get(text)
        return title_tokens(text) if pairs is None else pairs
