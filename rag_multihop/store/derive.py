"""The indexing stages: pure functions from a batch of passages to a segment's arrays.

Each function reads only its batch (and, for links, a title dictionary passed in), so any
engine can map it over shards. The arrays, by name (``<t>.hash/.ptr/.val`` is a keyed
postings table, :class:`~rag_multihop.store.tables.Postings`; ``<c>.blob/.off`` a string
column):

- :func:`passage_arrays`: ``ids``, ``titles``, ``texts`` columns, ``vectors`` (float32 unit
  rows), ``id`` (id → global row);
- :func:`name_arrays`: the ``names`` column (each passage's names joined by ``\x1f``: its
  title and, with ``subjects``, the subjects read from its text,
  :func:`passage_names`) and ``subject`` (1 where the names are more than the title);
- :func:`title_arrays`: ``title`` (name variant key → posting numbers), ``title.row`` and
  the ``title.qual`` column per posting (the qualifiers the variant dropped), ``first.hash``
  (the first words of the keys), ``gkey`` (the entity graph's title key → rows);
- :func:`piece_arrays`: ``piece`` (each normalised word of a text → rows): which passages a
  new title can touch, found without reading any text;
- :func:`entity_arrays`: ``ment.ptr``/``ment.ent`` (each passage's entities, CSR, global
  entity numbers), the ``ents`` column of new names and ``ent`` (name → number);
- :func:`link_arrays`, :func:`graph_link_arrays`: the title links of given rows (``link.*``
  with weights and each link's name spans in its source's tokens, ``link.nspan`` spans
  per link in ``link.span`` with their ``link.sflag`` flags; ``glink.*`` for the entity
  graph).

The ``entry_arrays``, ``hashed_piece_arrays``, ``link_table`` and ``graph_link_table``
variants lay out what workers already computed per passage
(:mod:`rag_multihop.store.batches`), so every engine writes the one layout defined here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from rag_multihop.graph.build import LINK_WORD, passage_entities, passage_title_links
from rag_multihop.graph.extract import EntityExtractor
from rag_multihop.multihop import subjects as subject_names
from rag_multihop.multihop.links import passage_link_spans
from rag_multihop.multihop.titles import TitleIndex, name_variants, title_tokens
from rag_multihop.store.tables import Postings, build_postings, key_hashes, pack_strings
from rag_multihop.store.views import QUALIFIER_SEPARATOR
from rag_multihop.text import normalize_word, title_key, visible
from rag_multihop.types import Passage

Arrays = dict[str, np.ndarray]


def _table(prefix: str, table: Postings) -> Arrays:
    return {
        f"{prefix}.hash": table.hashes,
        f"{prefix}.ptr": table.pointers,
        f"{prefix}.val": table.values,
    }


def _column(name: str, strings: Sequence[str]) -> Arrays:
    blob, offsets = pack_strings(strings)
    return {f"{name}.blob": blob, f"{name}.off": offsets}


def passage_arrays(passages: Sequence[Passage], vectors: np.ndarray, first_row: int) -> Arrays:
    """Strings, unit vectors and the id table of passages numbered from ``first_row``."""
    rows = np.arange(first_row, first_row + len(passages), dtype=np.int32)
    return {
        **_column("ids", [p.id for p in passages]),
        **_column("titles", [p.title for p in passages]),
        **_column("texts", [p.text for p in passages]),
        "vectors": np.ascontiguousarray(vectors, dtype=np.float32),
        **_table("id", build_postings(key_hashes(p.id for p in passages), rows)),
    }


def passage_names(passages: Sequence[Passage], subjects: bool) -> list[tuple[str, ...]]:
    """Each passage's names: its title and, with ``subjects``, the subjects read from its
    text (:func:`rag_multihop.multihop.subjects.passage_names`, per passage, as a fresh
    :class:`~rag_multihop.multihop.MultiHopRetriever` build reads them)."""
    if not subjects:
        return [(p.title,) for p in passages]
    return [subject_names.indexed_names(p) for p in passages]


def name_arrays(passages: Sequence[Passage], names: Sequence[Sequence[str]]) -> Arrays:
    """The ``names`` column and the ``subject`` flags of ``passages`` (names from
    :func:`passage_names`)."""
    return {
        **_column("names", [QUALIFIER_SEPARATOR.join(n) for n in names]),
        "subject": np.array(
            [tuple(n) != (p.title,) for p, n in zip(passages, names, strict=True)],
            dtype=np.uint8,
        ),
    }


def name_entries(known: Sequence[str]) -> list[tuple[str, str]]:
    """The title dictionary entries of one passage known by the names ``known``: each
    variant key once (the first name's qualifiers kept, as
    :class:`~rag_multihop.multihop.titles.TitleIndex` does) with its qualifiers joined by
    ``\x1f``.

    >>> name_entries(["Cape Fear (1962 film)"])
    [('cape fear 1962 film', ''), ('cape fear', '1962 film')]
    """
    return [(key, QUALIFIER_SEPARATOR.join(quals)) for key, quals in name_variants(known).items()]


def title_arrays(names: Sequence[Sequence[str]], titles: Sequence[str], first_row: int) -> Arrays:
    """The title dictionary entries of passages known by ``names`` (:func:`name_entries`)
    and the entity graph's title keys of their ``titles`` (rows from ``first_row``)."""
    return entry_arrays([name_entries(known) for known in names], titles, first_row)


def entry_arrays(
    entries: Sequence[Sequence[tuple[str, str]]], titles: Sequence[str], first_row: int
) -> Arrays:
    """:func:`title_arrays` of passages whose :func:`name_entries` are ``entries``."""
    keys: list[str] = []
    rows: list[int] = []
    qualifiers: list[str] = []
    graph_keys: list[str] = []
    graph_rows: list[int] = []
    for i, (found, title) in enumerate(zip(entries, titles, strict=True)):
        for key, quals in found:
            keys.append(key)
            rows.append(first_row + i)
            qualifiers.append(quals)
        key = title_key(title)
        if key:
            graph_keys.append(key)
            graph_rows.append(first_row + i)
    first_words = np.unique(key_hashes(key.split(" ", 1)[0] for key in keys))
    return {
        **_table("title", build_postings(key_hashes(keys), np.arange(len(keys), dtype=np.int32))),
        "title.row": np.array(rows, dtype=np.int32),
        **_column("title.qual", qualifiers),
        "first.hash": first_words.astype(np.uint64),
        **_table(
            "gkey", build_postings(key_hashes(graph_keys), np.array(graph_rows, dtype=np.int32))
        ),
    }


def changed_keys(names: Iterable[Sequence[str]], titles: Iterable[str]) -> set[str]:
    """Every key that passages known by ``names`` (name variants) and titled ``titles``
    (entity-graph title key) are found by."""
    keys: set[str] = set()
    for known in names:
        keys.update(name_variants(known))
    for title in titles:
        if title_key(title):
            keys.add(title_key(title))
    return keys


def text_pieces(text: str) -> set[str]:
    """The normalised words of ``text`` under both title matchers' tokenisations: a passage
    can name a key only if it holds every word of the key."""
    pieces = {token for _, token in title_tokens(text)}
    for word in LINK_WORD.findall(visible(text)):
        pieces.update(normalize_word(word).split())
    return pieces


def piece_hashes(text: str) -> np.ndarray:
    """The key hashes of :func:`text_pieces` of ``text``, in sorted piece order."""
    return key_hashes(sorted(text_pieces(text)))


def piece_arrays(texts: Sequence[str], first_row: int) -> Arrays:
    """The word → rows postings of ``texts`` (rows from ``first_row``)."""
    return hashed_piece_arrays([piece_hashes(text) for text in texts], first_row)


def hashed_piece_arrays(hashes: Sequence[np.ndarray], first_row: int) -> Arrays:
    """:func:`piece_arrays` of texts whose :func:`piece_hashes` are ``hashes``."""
    counts = np.array([len(h) for h in hashes], dtype=np.int64)
    rows = np.repeat(np.arange(first_row, first_row + len(hashes), dtype=np.int32), counts)
    flat = np.concatenate(hashes) if len(hashes) else np.zeros(0, dtype=np.uint64)
    return _table("piece", build_postings(flat.astype(np.uint64), rows))


def extract_entities(
    extractor: EntityExtractor, passages: Sequence[Passage], batch_size: int = 256
) -> list[list[str]]:
    """Each passage's entity names (own title key first), as the entity graph reads them."""
    texts = [p.text for p in passages]
    names: list[list[str]] = []
    for start in range(0, len(texts), batch_size):
        names.extend(extractor.extract(texts[start : start + batch_size]))
    if len(names) != len(texts):
        raise ValueError(
            f"extractor {extractor.name!r} returned {len(names)} lists for {len(texts)} texts"
        )
    return [passage_entities(p.title, found) for p, found in zip(passages, names, strict=True)]


def entity_arrays(
    names: Sequence[Sequence[str]], known: Callable[[str], int | None], first_entity: int
) -> Arrays:
    """Each passage's entities as global numbers: ``known(name)`` for interned names, new
    numbers from ``first_entity`` for the others (their names in the ``ents`` column)."""
    new: dict[str, int] = {}
    pointers = np.zeros(len(names) + 1, dtype=np.int64)
    numbers: list[int] = []
    for i, passage_names in enumerate(names):
        for name in passage_names:
            number = new.get(name)
            if number is None:
                number = known(name)
            if number is None:
                number = new[name] = first_entity + len(new)
            numbers.append(number)
        pointers[i + 1] = len(numbers)
    return {
        "ment.ptr": pointers,
        "ment.ent": np.array(numbers, dtype=np.int32),
        **_column("ents", list(new)),
        **_table("ent", build_postings(key_hashes(new), np.array(list(new.values()), np.int32))),
    }


Links = list[tuple[int, float, list[tuple[int, int, int]]]]
"""One passage's title links: ``(target, weight, spans)``, spans ``(start, end, flags)``."""


def link_arrays(rows: Sequence[int], texts: Sequence[str], titles: TitleIndex) -> Arrays:
    """The title links of passages ``rows`` (texts ``texts``) against ``titles``: targets,
    weights, and each link's name spans in its source's tokens with their flags (the
    context is read from the text around them when a query asks,
    :func:`~rag_multihop.multihop.links.span_context`)."""
    found = [
        passage_link_spans(row, text, titles)[1] for row, text in zip(rows, texts, strict=True)
    ]
    return link_table(rows, found)


def link_table(rows: Sequence[int], links: Sequence[Links]) -> Arrays:
    """The ``link.*`` arrays of passages ``rows`` with the given links each."""
    pointers = np.zeros(len(rows) + 1, dtype=np.int64)
    targets: list[int] = []
    weights: list[float] = []
    counts: list[int] = []
    spans: list[tuple[int, int]] = []
    flags: list[int] = []
    for i, found in enumerate(links):
        for target, weight, where in found:
            targets.append(target)
            weights.append(weight)
            counts.append(len(where))
            spans.extend((start, end) for start, end, _ in where)
            flags.extend(flag for _, _, flag in where)
        pointers[i + 1] = len(targets)
    return {
        "link.rows": np.array(rows, dtype=np.int32),
        "link.ptr": pointers,
        "link.dst": np.array(targets, dtype=np.int32),
        "link.w": np.array(weights, dtype=np.float64),
        "link.nspan": np.array(counts, dtype=np.int32),
        "link.span": np.array(spans, dtype=np.int32).reshape(-1, 2),
        "link.sflag": np.array(flags, dtype=np.uint8),
    }


def concat_tables(prefix: str, first: Arrays, second: Arrays) -> Arrays:
    """Two ``<prefix>.*`` CSR tables (rows, pointers, per-entry columns) as one (the
    ``<prefix>.*`` arrays of ``first``; other arrays in it are left out)."""
    out: Arrays = {}
    for key, value in first.items():
        if not key.startswith(f"{prefix}."):
            continue
        if key == f"{prefix}.ptr":
            out[key] = np.concatenate([value, second[key][1:] + value[-1]])
        else:
            out[key] = np.concatenate([value, second[key]])
    return out


def graph_link_arrays(
    rows: Sequence[int],
    texts: Sequence[str],
    rows_of: Callable[[str], Iterable[int]],
    max_title_words: int,
) -> Arrays:
    """The entity graph's title links of passages ``rows`` (``rows_of(key)``: live rows)."""
    return graph_link_table(
        rows,
        [
            passage_title_links(row, text, rows_of, max_title_words)
            for row, text in zip(rows, texts, strict=True)
        ],
    )


def graph_link_table(rows: Sequence[int], targets: Sequence[Sequence[int]]) -> Arrays:
    """The ``glink.*`` arrays of passages ``rows`` linking to ``targets`` (per passage)."""
    pointers = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(found) for found in targets], out=pointers[1:])
    return {
        "glink.rows": np.array(rows, dtype=np.int32),
        "glink.ptr": pointers,
        "glink.dst": np.array([t for found in targets for t in found], dtype=np.int32),
    }
