"""Per-passage and per-entity names served from the memory-mapped columns, not Python lists.

A reader of a million-passage index must not build a million ``str`` objects (and a dict
of them) to answer its first query: these sequences and mappings read one string, or do
one hashed look-up, when asked.

- :class:`PassageIds`: live position → passage id (a ``Sequence[str]``);
- :class:`IdPositions`: passage id → live position (a ``Mapping[str, int]``), through the
  segments' sorted id hashes, the stored id checked;
- :class:`EntityNames`, :class:`EntityNumbers`: the same two for the entity graph's names
  (entities numbered by first live mention; a name no live passage mentions is absent).

Example (``segments`` and live positions from an :class:`~rag_multihop.store.IndexSnapshot`):
    >>> import tempfile, numpy as np
    >>> from rag_multihop import Passage
    >>> from rag_multihop.store import CorpusIndex
    >>> index = CorpusIndex.create(tempfile.mkdtemp() + "/idx", dim=2)
    >>> _ = index.add([Passage("a", "Rope.", "Rope"), Passage("b", "Psycho.", "Psycho")],
    ...               np.eye(2))
    >>> _ = index.delete(["a"])
    >>> snapshot = index.snapshot()
    >>> ids = PassageIds(snapshot.segments, snapshot.live_rows)
    >>> list(ids), IdPositions(snapshot.segments, snapshot.positions, ids.recent)["b"]
    (['b'], 0)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np

from rag_multihop.store.tables import key_hash, lookup, unpack_string
from rag_multihop.store.views import SegmentSet

RECENT_IDS = 1 << 16
"""How many ids :class:`PassageIds` remembers the positions of (a search returns ids that
the caller maps back to positions at once)."""


class PassageIds(Sequence[str]):
    """The ids of the live passages, by position (``live_rows[i]`` is position ``i``'s row).
    The last ids read (here or by :meth:`remember`) are kept with their positions
    (``recent``, at most :data:`RECENT_IDS`), so :class:`IdPositions` maps them back
    without a search."""

    def __init__(self, segments: SegmentSet, live_rows: np.ndarray) -> None:
        self._segments = segments
        self._rows = live_rows
        self.recent: dict[str, int] = {}

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    @overload
    def __getitem__(self, position: int) -> str: ...

    @overload
    def __getitem__(self, position: slice) -> list[str]: ...

    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        position = int(position)
        passage_id = self._segments.string("ids", int(self._rows[position]))
        self.remember(passage_id, position if position >= 0 else position + len(self))
        return passage_id

    def remember(self, passage_id: str, position: int) -> None:
        """Add ``passage_id`` at ``position`` to :attr:`recent` (a reader that unpacked the
        id itself, e.g. a passage's, registers it so that mapping it back costs no search)."""
        if len(self.recent) >= RECENT_IDS:
            self.recent.clear()
        self.recent[passage_id] = position

    def __iter__(self) -> Iterator[str]:
        for segment in self._segments.segments:
            start, end = segment.rows
            alive = self._segments.alive[start:end]
            blob, offsets = segment["ids.blob"], segment["ids.off"]
            for local in np.flatnonzero(alive).tolist():
                yield unpack_string(blob, offsets, local)


class IdPositions(Mapping[str, int]):
    """Passage id → live position (``positions``: global row → position, ``-1`` if dead;
    ``recent``: the ids :class:`PassageIds` read last, answered without a search)."""

    def __init__(
        self, segments: SegmentSet, positions: np.ndarray, recent: Mapping[str, int]
    ) -> None:
        self._segments = segments
        self._positions = positions
        self._recent = recent

    def __getitem__(self, passage_id: str) -> int:
        found = self._recent.get(passage_id)
        if found is not None:
            return found
        row = self._segments.row_of(passage_id) if isinstance(passage_id, str) else None
        if row is None:
            raise KeyError(passage_id)
        return int(self._positions[row])

    def __iter__(self) -> Iterator[str]:
        return iter(PassageIds(self._segments, np.flatnonzero(self._positions >= 0)))

    def __len__(self) -> int:
        return int((self._positions >= 0).sum())


class EntityNames(Sequence[str]):
    """The entity graph's names by live entity number (``globals_[i]``: the interned, global
    number of live entity ``i``)."""

    def __init__(self, segments: SegmentSet, globals_: np.ndarray) -> None:
        self._segments = segments
        self._globals = globals_
        self._starts = [s.entities[0] for s in segments.segments]

    def __len__(self) -> int:
        return int(self._globals.shape[0])

    def name(self, number: int) -> str:
        """The name of global entity ``number``."""
        segments = self._segments.segments
        i = bisect_right(self._starts, number) - 1
        while segments[i].entities[1] <= number:  # segments that intern nothing share a start
            i += 1
        segment = segments[i]
        local = number - segment.entities[0]
        return unpack_string(segment["ents.blob"], segment["ents.off"], local)

    @overload
    def __getitem__(self, position: int) -> str: ...

    @overload
    def __getitem__(self, position: slice) -> list[str]: ...

    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        return self.name(int(self._globals[position]))


class EntityNumbers(Mapping[str, int]):
    """Entity name → live entity number (``numbers``: global number → live number, ``-1``
    for names no live passage mentions); the stored name is checked, so a hash collision
    is no match."""

    def __init__(self, names: EntityNames, numbers: np.ndarray) -> None:
        self._names = names
        self._numbers = numbers

    def __getitem__(self, name: str) -> int:
        if isinstance(name, str):
            h = key_hash(name)
            for segment in self._names._segments.segments:
                found = lookup(segment.table("ent"), h)
                if found.size:
                    number = int(found[0])
                    live = int(self._numbers[number])
                    if live >= 0 and self._names.name(number) == name:
                        return live
                    break
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
