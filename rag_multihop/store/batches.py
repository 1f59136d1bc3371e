"""Building an index's first segment as pure functions over batches of columns.

A batch is a dict of equal-length columns (lists), Arrow-friendly: ``id``, ``text`` and
``title`` come in, and each pass returns its own columns, one entry per passage. The plan,
which any engine can map over shards (:func:`build_arrays` is the in-process engine, a loop;
:mod:`rag_multihop.store.ray_build` maps the same functions with Ray):

1. pass 1, :func:`read_batch`: each passage's names (its title and the subjects read from
   its text), their title dictionary entries, the hashes of its words and its entity names;
2. merge, :meth:`NameDictionary.of`: the title dictionary of every passage (rows in input
   order) and the entity graph's title keys, broadcast to the workers;
3. pass 2, :func:`link_batch`: each passage's title links (both kinds) against it;
4. merge, :func:`segment_arrays`: the columns laid end to end as one segment's arrays by
   :mod:`~rag_multihop.store.derive` (entities numbered in passage order).

The arrays do not depend on how the passages were split into batches, so every engine
writes the same segment. Example:

    >>> from rag_multihop import Passage
    >>> from rag_multihop.graph.extract import HeuristicExtractor
    >>> from rag_multihop.store.settings import IndexSettings
    >>> passages = [Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope"),
    ...             Passage("b", "Alfred Hitchcock was a director.", "Alfred Hitchcock")]
    >>> arrays = build_arrays(passages, np.eye(2, dtype=np.float32), IndexSettings(),
    ...                       HeuristicExtractor(), batch_size=1)
    >>> arrays["link.dst"].tolist(), arrays["glink.dst"].tolist()
    ([1], [1])
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_multihop.graph.build import passage_title_links
from rag_multihop.graph.extract import EntityExtractor
from rag_multihop.multihop.links import passage_link_spans
from rag_multihop.multihop.titles import TitleIndex
from rag_multihop.store import derive
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.views import QUALIFIER_SEPARATOR
from rag_multihop.text import title_key
from rag_multihop.types import Passage
from rag_multihop.validation import check_positive_int

Batch = dict[str, list[Any]]
"""Equal-length columns, one entry per passage."""

Progress = Callable[[str, int, int], None]
"""A progress callback: ``(stage, passages done, passages in all)``, called after each batch."""

READ_STAGE = "read names"
LINK_STAGE = "find links"
DEFAULT_BATCH_SIZE = 512


def passage_batch(passages: Sequence[Passage]) -> Batch:
    """The ``id``, ``text`` and ``title`` columns of ``passages``."""
    return {
        "id": [p.id for p in passages],
        "text": [p.text for p in passages],
        "title": [p.title for p in passages],
    }


def batch_passages(batch: Mapping[str, Sequence[Any]]) -> list[Passage]:
    """The passages of a batch's ``id``, ``text`` and (optional) ``title`` columns."""
    ids, texts = batch["id"], batch["text"]
    titles = batch.get("title")
    if titles is None:
        titles = [""] * len(ids)
    return [
        Passage(str(i), str(t), "" if title is None else str(title))
        for i, t, title in zip(ids, texts, titles, strict=True)
    ]


def read_batch(
    batch: Mapping[str, Sequence[Any]], *, subjects: bool, extractor: EntityExtractor
) -> Batch:
    """Pass 1 over one batch: per passage, ``names`` (title and subjects), the title
    dictionary ``keys`` and their ``quals`` (qualifiers joined by ``\\x1f``), the word
    ``pieces`` (``uint64`` key hashes) and the ``entities`` (names, own title first)."""
    passages = batch_passages(batch)
    names = derive.passage_names(passages, subjects)
    entries = [derive.name_entries(known) for known in names]
    return {
        "names": [list(known) for known in names],
        "keys": [[key for key, _ in found] for found in entries],
        "quals": [[quals for _, quals in found] for found in entries],
        "pieces": [derive.piece_hashes(p.text) for p in passages],
        "entities": derive.extract_entities(extractor, passages),
    }


@dataclass(frozen=True, eq=False)
class NameDictionary:
    """What pass 2 needs of the whole corpus, made once and broadcast to the workers.

    Attributes:
        titles: the title dictionary of every passage's names (rows in input order).
        graph_rows: the entity graph's title key → the rows titled by it.
        graph_max_words: the longest entity-graph title, in words.
    """

    titles: TitleIndex
    graph_rows: Mapping[str, list[int]]
    graph_max_words: int

    @classmethod
    def of(
        cls,
        keys: Sequence[Sequence[str]],
        quals: Sequence[Sequence[str]],
        titles: Sequence[str],
        settings: IndexSettings,
    ) -> NameDictionary:
        """The dictionary of passages whose pass-1 ``keys`` and ``quals`` (in row order)
        and ``titles`` are given."""
        builder = DictionaryBuilder()
        builder.add(keys, quals, titles)
        return builder.finish(settings)


class DictionaryBuilder:
    """A :class:`NameDictionary` made batch by batch, in row order (a streaming build
    keeps only this of pass 1 in memory)."""

    def __init__(self) -> None:
        self._by_key: dict[str, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
        self._graph_rows: dict[str, list[int]] = defaultdict(list)
        self._rows = 0

    def add(
        self, keys: Sequence[Sequence[str]], quals: Sequence[Sequence[str]], titles: Sequence[str]
    ) -> None:
        """The next passages' pass-1 ``keys`` and ``quals`` and their ``titles``."""
        by_key, graph_rows = self._by_key, self._graph_rows
        for row, (found, qualifiers, title) in enumerate(
            zip(keys, quals, titles, strict=True), start=self._rows
        ):
            for key, joined in zip(found, qualifiers, strict=True):
                by_key[key].append(
                    (row, tuple(joined.split(QUALIFIER_SEPARATOR)) if joined else ())
                )
            key = title_key(title)
            if key:
                graph_rows[key].append(row)
        self._rows += len(titles)

    def finish(self, settings: IndexSettings) -> NameDictionary:
        """The dictionary of every passage added."""
        return NameDictionary(
            TitleIndex.from_keys(
                dict(self._by_key), self._rows, max_words=settings.title_max_words
            ),
            dict(self._graph_rows),
            settings.graph_max_title_words,
        )


def link_batch(batch: Mapping[str, Sequence[Any]], dictionary: NameDictionary) -> Batch:
    """Pass 2 over one batch of ``row`` and ``text`` columns: per passage, its title links
    (``link.dst`` targets, ``link.w`` weights, ``link.nspan`` name spans per link, the spans
    ``link.span`` as flat ``start, end`` pairs and their ``link.sflag`` flags) and the
    entity graph's title links (``glink.dst``)."""
    graph_rows = dictionary.graph_rows
    out: Batch = {
        "link.dst": [],
        "link.w": [],
        "link.nspan": [],
        "link.span": [],
        "link.sflag": [],
        "glink.dst": [],
    }
    for row, text in zip(batch["row"], batch["text"], strict=True):
        row, text = int(row), str(text)
        found = passage_link_spans(row, text, dictionary.titles)[1]
        out["link.dst"].append([target for target, _, _ in found])
        out["link.w"].append([weight for _, weight, _ in found])
        out["link.nspan"].append([len(spans) for _, _, spans in found])
        out["link.span"].append([x for _, _, spans in found for s in spans for x in s[:2]])
        out["link.sflag"].append([s[2] for _, _, spans in found for s in spans])
        out["glink.dst"].append(
            passage_title_links(
                row, text, lambda key: graph_rows.get(key, ()), dictionary.graph_max_words
            )
        )
    return out


def _links(
    targets: Sequence[int],
    weights: Sequence[float],
    counts: Sequence[int],
    spans: Sequence[int],
    flags: Sequence[int],
) -> derive.Links:
    """One passage's links from its pass-2 columns (the inverse of :func:`link_batch`)."""
    out: derive.Links = []
    at = 0
    for target, weight, count in zip(targets, weights, counts, strict=True):
        where = [
            (int(spans[2 * i]), int(spans[2 * i + 1]), int(flags[i])) for i in range(at, at + count)
        ]
        out.append((int(target), float(weight), where))
        at += count
    return out


def segment_arrays(
    passages: Mapping[str, Sequence[Any]],
    read: Mapping[str, Sequence[Any]],
    links: Mapping[str, Sequence[Any]],
    vectors: np.ndarray,
) -> derive.Arrays:
    """The first segment's arrays (rows from 0) of ``passages`` (columns), their pass-1
    columns ``read``, pass-2 columns ``links`` and unit ``vectors``, all in row order."""
    rows = batch_passages(passages)
    n = len(rows)
    for name, columns in (("pass 1", read), ("pass 2", links)):
        lengths = {key: len(column) for key, column in columns.items()}
        if any(length != n for length in lengths.values()):
            raise ValueError(f"{name} returned columns of lengths {lengths} for {n} passages")
    entries = [
        list(zip(keys, quals, strict=True))
        for keys, quals in zip(read["keys"], read["quals"], strict=True)
    ]
    numbers = list(range(n))
    arrays = derive.passage_arrays(rows, vectors, 0)
    arrays |= derive.name_arrays(rows, [tuple(known) for known in read["names"]])
    arrays |= derive.entry_arrays(entries, [p.title for p in rows], 0)
    arrays |= derive.hashed_piece_arrays([np.asarray(h, np.uint64) for h in read["pieces"]], 0)
    arrays |= derive.entity_arrays([list(e) for e in read["entities"]], lambda _: None, 0)
    arrays["dead"] = np.zeros(0, dtype=np.int32)
    names = ("link.dst", "link.w", "link.nspan", "link.span", "link.sflag")
    found = [_links(*values) for values in zip(*(links[c] for c in names), strict=True)]
    arrays |= derive.link_table(numbers, found)
    arrays |= derive.graph_link_table(numbers, links["glink.dst"])
    return arrays


def concat(batches: Sequence[Mapping[str, Sequence[Any]]]) -> Batch:
    """Batches laid end to end (the columns of the first)."""
    if not batches:
        return {}
    return {key: [value for batch in batches for value in batch[key]] for key in batches[0]}


def slices(batch: Mapping[str, Sequence[Any]], size: int) -> Iterator[Batch]:
    """``batch`` cut into batches of ``size`` rows (the last may be shorter)."""
    n = len(next(iter(batch.values()), []))
    for start in range(0, n, size):
        yield {key: list(column[start : start + size]) for key, column in batch.items()}


def build_arrays(
    passages: Sequence[Passage],
    vectors: np.ndarray,
    settings: IndexSettings,
    extractor: EntityExtractor,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
) -> derive.Arrays:
    """The in-process engine: both passes as loops over batches of ``batch_size`` passages,
    then the merge (``vectors``: unit rows, one per passage)."""
    size = check_positive_int(batch_size, "batch_size")
    columns = passage_batch(passages)
    n = len(passages)
    read = concat(
        _mapped(
            _nonempty(slices(columns, size), columns),
            lambda b: read_batch(b, subjects=settings.subjects, extractor=extractor),
            READ_STAGE,
            n,
            progress,
        )
    )
    dictionary = NameDictionary.of(read["keys"], read["quals"], columns["title"], settings)
    pairs = {"row": list(range(n)), "text": columns["text"]}
    links = concat(
        _mapped(
            _nonempty(slices(pairs, size), pairs),
            lambda b: link_batch(b, dictionary),
            LINK_STAGE,
            n,
            progress,
        )
    )
    return segment_arrays(columns, read, links, vectors)


def _nonempty(batches: Iterator[Batch], columns: Batch) -> Iterator[Batch]:
    """``batches``, or one empty batch of ``columns`` when there are none (so an empty
    corpus still yields every output column)."""
    empty = True
    for batch in batches:
        empty = False
        yield batch
    if empty:
        yield {key: [] for key in columns}


def _mapped(
    batches: Iterator[Batch],
    function: Callable[[Batch], Batch],
    stage: str,
    total: int,
    progress: Progress | None,
) -> list[Batch]:
    out = []
    done = 0
    for batch in batches:
        out.append(function(batch))
        done += len(batch["text"])
        if progress is not None:
            progress(stage, done, total)
    return out
