"""A first segment built in parts: one part per unit of input (a shard), merged as arrays.

An engine that maps the batch plan (:mod:`rag_multihop.store.batches`) over units of
passages keeps each unit's results as numpy arrays, never as Python objects per passage,
so they can be written to disk by the worker and memory-mapped by the driver:

1. :func:`read_part` (pass 1, a worker): the unit's strings, unit vectors, name
   dictionary entries, word hashes and entities, rows numbered from 0 within the unit;
2. :func:`name_dictionary` (every worker, or the driver): the
   :class:`~rag_multihop.store.batches.NameDictionary` of all units' entries
   (:data:`ENTRY_ARRAYS`), rows numbered in unit order;
3. :func:`link_part` (pass 2, a worker): the unit's title links against it;
4. :func:`merge_parts` (the driver): the parts laid end to end as one segment's arrays,
   equal to :func:`~rag_multihop.store.batches.build_arrays` of the same passages (postings
   sorted, entities numbered in passage order, rows and pointers shifted).

Example:
    >>> from rag_multihop import Passage
    >>> from rag_multihop.graph.extract import HeuristicExtractor
    >>> from rag_multihop.store.settings import IndexSettings
    >>> units = [[Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope")],
    ...          [Passage("b", "Alfred Hitchcock was a director.", "Alfred Hitchcock")]]
    >>> read = [read_part(batches.passage_batch(u), np.eye(2, dtype=np.float32)[i : i + 1],
    ...                   subjects=True, extractor=HeuristicExtractor())
    ...         for i, u in enumerate(units)]
    >>> names = name_dictionary(read, IndexSettings())
    >>> linked = [link_part(u["texts.blob"], u["texts.off"], first, names)
    ...           for u, first in zip(read, [0, 1])]
    >>> merge_parts([r | k for r, k in zip(read, linked)])["link.dst"].tolist()
    [1]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_multihop.graph.extract import EntityExtractor
from rag_multihop.multihop.titles import TitleIndex
from rag_multihop.store import batches, derive
from rag_multihop.store.batches import NameDictionary
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.tables import build_postings, key_hashes, pack_strings, unpack_strings
from rag_multihop.store.views import QUALIFIER_SEPARATOR
from rag_multihop.text import title_key

Part = dict[str, np.ndarray]
"""A unit's arrays by name (rows from 0 within the unit)."""

STRING_COLUMNS = ("ids", "titles", "texts", "names", "title.qual")
"""String columns (``<name>.blob``/``.off``) laid end to end as they are."""

ENTRY_ARRAYS = (
    "rows",
    "title.key.blob",
    "title.key.off",
    "title.row",
    "title.qual.blob",
    "title.qual.off",
    "gkey.key.blob",
    "gkey.key.off",
    "gkey.row",
)
"""The arrays of a pass-1 part that the name dictionary is made of (a few per passage)."""

LINK_COLUMNS = ("link.dst", "link.w", "link.nspan", "link.span", "link.sflag")
"""A pass-2 part's per-link arrays besides the pointers (``glink.dst`` for the graph)."""


def _strings(name: str, strings: Sequence[str]) -> Part:
    blob, offsets = pack_strings(strings)
    return {f"{name}.blob": blob, f"{name}.off": offsets}


def decoded(part: Mapping[str, np.ndarray], name: str) -> list[str]:
    """The strings of column ``name`` (``<name>.blob``/``.off``) of ``part``."""
    return unpack_strings(np.asarray(part[f"{name}.blob"]), np.asarray(part[f"{name}.off"]))


def read_part(
    batch: Mapping[str, Sequence[Any]],
    vectors: np.ndarray,
    *,
    subjects: bool,
    extractor: EntityExtractor,
    batch_size: int = batches.DEFAULT_BATCH_SIZE,
) -> Part:
    """Pass 1 over one unit (``id``, ``text``, ``title`` columns; ``vectors``: its unit
    rows): :func:`~rag_multihop.store.batches.read_batch` over batches of ``batch_size``,
    laid out as arrays with rows from 0."""
    read = batches.concat(
        [
            batches.read_batch(b, subjects=subjects, extractor=extractor)
            for b in batches.slices(dict(batch), batch_size)
        ]
    ) or {key: [] for key in ("names", "keys", "quals", "pieces", "entities")}
    passages = batches.batch_passages(batch)
    n = len(passages)
    part: Part = {
        "rows": np.array([n], dtype=np.int64),
        **_strings("ids", [p.id for p in passages]),
        **_strings("titles", [p.title for p in passages]),
        **_strings("texts", [p.text for p in passages]),
        "vectors": np.ascontiguousarray(vectors, dtype=np.float32),
        "id.key": key_hashes(p.id for p in passages),
    }
    part |= derive.name_arrays(passages, [tuple(known) for known in read["names"]])
    counts = np.array([len(keys) for keys in read["keys"]], dtype=np.int64)
    keys = [key for found in read["keys"] for key in found]
    part |= _strings("title.key", keys)
    part["title.kh"] = key_hashes(keys)
    part["title.row"] = np.repeat(np.arange(n, dtype=np.int32), counts)
    part |= _strings("title.qual", [q for found in read["quals"] for q in found])
    part["first.hash"] = np.unique(key_hashes(key.split(" ", 1)[0] for key in keys))
    graph = [(row, title_key(p.title)) for row, p in enumerate(passages)]
    graph = [(row, key) for row, key in graph if key]
    part |= _strings("gkey.key", [key for _, key in graph])
    part["gkey.row"] = np.array([row for row, _ in graph], dtype=np.int32)
    part["gkey.kh"] = key_hashes(key for _, key in graph)
    pieces = [np.asarray(h, dtype=np.uint64) for h in read["pieces"]]
    part["piece.key"] = np.concatenate(pieces) if pieces else np.zeros(0, np.uint64)
    part["piece.count"] = np.array([len(h) for h in pieces], dtype=np.int64)
    local = derive.entity_arrays([list(e) for e in read["entities"]], lambda _: None, 0)
    part |= {key: local[key] for key in ("ment.ptr", "ment.ent", "ents.blob", "ents.off")}
    part["ents.key"] = key_hashes(decoded(local, "ents"))
    return part


def entries(part: Mapping[str, np.ndarray]) -> Part:
    """The arrays of a pass-1 part that :func:`name_dictionary` reads."""
    return {name: np.asarray(part[name]) for name in ENTRY_ARRAYS}


def name_dictionary(
    parts: Sequence[Mapping[str, np.ndarray]], settings: IndexSettings
) -> NameDictionary:
    """The :class:`~rag_multihop.store.batches.NameDictionary` of the passages of
    ``parts`` (pass-1 parts, or their :func:`entries`, in unit order), as
    :meth:`NameDictionary.of <rag_multihop.store.batches.NameDictionary.of>` makes it."""
    by_key: dict[str, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
    graph_rows: dict[str, list[int]] = defaultdict(list)
    first = 0
    for part in parts:
        rows = (np.asarray(part["title.row"], dtype=np.int64) + first).tolist()
        for key, row, joined in zip(
            decoded(part, "title.key"), rows, decoded(part, "title.qual"), strict=True
        ):
            by_key[key].append((row, tuple(joined.split(QUALIFIER_SEPARATOR)) if joined else ()))
        rows = (np.asarray(part["gkey.row"], dtype=np.int64) + first).tolist()
        for key, row in zip(decoded(part, "gkey.key"), rows, strict=True):
            graph_rows[key].append(row)
        first += int(part["rows"][0])
    return NameDictionary(
        TitleIndex.from_keys(dict(by_key), first, max_words=settings.title_max_words),
        dict(graph_rows),
        settings.graph_max_title_words,
    )


def link_part(
    blob: np.ndarray, offsets: np.ndarray, first_row: int, dictionary: NameDictionary
) -> Part:
    """Pass 2 over one unit whose texts are the string column ``blob``/``offsets`` and
    whose first passage is global row ``first_row``: its title links and entity-graph title
    links (targets are global rows; pointers from 0 within the unit)."""
    texts = unpack_strings(np.asarray(blob), np.asarray(offsets))
    rows = list(range(first_row, first_row + len(texts)))
    graph_rows = dictionary.graph_rows
    part = derive.link_arrays(rows, texts, dictionary.titles)
    part |= derive.graph_link_arrays(
        rows, texts, lambda key: graph_rows.get(key, ()), dictionary.graph_max_words
    )
    del part["link.rows"], part["glink.rows"]
    return part


def _ends(parts: Sequence[Mapping[str, np.ndarray]], name: str) -> list[np.ndarray]:
    return [np.asarray(part[name]) for part in parts]


def _column(parts: Sequence[Mapping[str, np.ndarray]], name: str) -> Part:
    """String column ``name`` of ``parts`` laid end to end."""
    blobs = _ends(parts, f"{name}.blob")
    offsets = _ends(parts, f"{name}.off")
    return {f"{name}.blob": np.concatenate(blobs), f"{name}.off": _pointers(offsets)}


def _pointers(pointers: Sequence[np.ndarray]) -> np.ndarray:
    """CSR pointers of parts (each from 0) as one array (``int64``)."""
    out = [np.zeros(1, dtype=np.int64)]
    at = 0
    for ptr in pointers:
        out.append(ptr[1:].astype(np.int64) + at)
        at += int(ptr[-1])
    return np.concatenate(out)


def _rows_of(parts: Sequence[Mapping[str, np.ndarray]], name: str) -> np.ndarray:
    """Row array ``name`` of ``parts`` (each from 0) shifted to global rows (``int32``)."""
    firsts = np.cumsum([0] + [int(part["rows"][0]) for part in parts])
    return np.concatenate(
        [np.zeros(0, np.int32)]
        + [
            np.asarray(part[name]).astype(np.int32) + np.int32(first)
            for part, first in zip(parts, firsts.tolist(), strict=False)
        ]
    )


def _table(prefix: str, hashes: np.ndarray, values: np.ndarray) -> Part:
    table = build_postings(hashes, values)
    return {
        f"{prefix}.hash": table.hashes,
        f"{prefix}.ptr": table.pointers,
        f"{prefix}.val": table.values,
    }


def _entities(parts: Sequence[Mapping[str, np.ndarray]]) -> Part:
    """Entities numbered in passage order over all parts (each part's numbers are its own)."""
    numbers: dict[str, int] = {}
    new_names: list[str] = []
    new_hashes: list[np.ndarray] = []
    mentions: list[np.ndarray] = []
    for part in parts:
        names = decoded(part, "ents")
        hashes = np.asarray(part["ents.key"])
        mapped = np.empty(len(names), dtype=np.int32)
        fresh = np.zeros(len(names), dtype=bool)
        for i, name in enumerate(names):
            number = numbers.get(name)
            if number is None:
                number = numbers[name] = len(numbers)
                new_names.append(name)
                fresh[i] = True
            mapped[i] = number
        new_hashes.append(hashes[fresh])
        mentions.append(mapped[np.asarray(part["ment.ent"], dtype=np.int64)])
    return {
        "ment.ptr": _pointers(_ends(parts, "ment.ptr")),
        "ment.ent": np.concatenate([np.zeros(0, np.int32), *mentions]),
        **_strings("ents", new_names),
        **_table(
            "ent",
            np.concatenate([np.zeros(0, np.uint64), *new_hashes]),
            np.arange(len(new_names), dtype=np.int32),
        ),
    }


def merge_parts(parts: Sequence[Mapping[str, np.ndarray]]) -> derive.Arrays:
    """The first segment's arrays of ``parts`` (each a :func:`read_part` and its
    :func:`link_part`, in unit order; memory maps welcome: each array is read once; parts
    without rows are left out)."""
    parts = [part for part in parts if int(part["rows"][0])]
    if not parts:
        raise ValueError("merge_parts needs at least one part with passages")
    n = sum(int(part["rows"][0]) for part in parts)
    rows = np.arange(n, dtype=np.int32)
    arrays: derive.Arrays = {}
    for name in STRING_COLUMNS:
        arrays |= _column(parts, name)
    arrays["vectors"] = np.concatenate(_ends(parts, "vectors"))
    arrays |= _table("id", np.concatenate(_ends(parts, "id.key")), rows)
    arrays["subject"] = np.concatenate(_ends(parts, "subject"))
    keys = np.concatenate(_ends(parts, "title.kh"))
    arrays |= _table("title", keys, np.arange(len(keys), dtype=np.int32))
    arrays["title.row"] = _rows_of(parts, "title.row")
    arrays["first.hash"] = np.unique(np.concatenate(_ends(parts, "first.hash"))).astype(np.uint64)
    arrays |= _table("gkey", np.concatenate(_ends(parts, "gkey.kh")), _rows_of(parts, "gkey.row"))
    counts = np.concatenate(_ends(parts, "piece.count"))
    arrays |= _table("piece", np.concatenate(_ends(parts, "piece.key")), np.repeat(rows, counts))
    arrays |= _entities(parts)
    arrays["dead"] = np.zeros(0, dtype=np.int32)
    arrays["link.rows"] = rows
    arrays["link.ptr"] = _pointers(_ends(parts, "link.ptr"))
    for name in LINK_COLUMNS:
        arrays[name] = np.concatenate(_ends(parts, name))
    arrays["glink.rows"] = rows.copy()
    arrays["glink.ptr"] = _pointers(_ends(parts, "glink.ptr"))
    arrays["glink.dst"] = np.concatenate(_ends(parts, "glink.dst"))
    return arrays
