"""An index's first segment built from a stream of batches, its columns written to disk as
they are made: the in-process build of a corpus that does not fit in memory.

The plan is :mod:`rag_multihop.store.batches`'s (pass 1 :func:`~.batches.read_batch`, the
name dictionary, pass 2 :func:`~.batches.link_batch`), and the arrays equal
:func:`~.batches.segment_arrays`'s, whatever the batch sizes. What stays in memory is the
name dictionary pass 2 needs, the entity names being interned, and per-passage offsets and
hashes (numbers, not Python objects); texts, vectors, word postings and links are appended
to the segment's files (:class:`~.segment.ArrayFile`) and pass 2 reads the texts back from
there. The keyed postings tables are sorted at the end, one at a time.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from rag_multihop import Passage
    >>> from rag_multihop.graph.extract import HeuristicExtractor
    >>> from rag_multihop.store.settings import IndexSettings
    >>> from rag_multihop.store.segment import StagedSegment
    >>> staged = StagedSegment(Path(tempfile.mkdtemp()))
    >>> batches = [([Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope")], np.eye(2)[:1]),
    ...            ([Passage("b", "Alfred Hitchcock was a director.", "Alfred Hitchcock")],
    ...             np.eye(2)[1:])]
    >>> arrays = stream_arrays(staged, batches, IndexSettings(), HeuristicExtractor(), dim=2)
    >>> arrays["link.dst"].tolist(), arrays["ids.off"].tolist()
    ([1], [0, 1, 2])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from rag_multihop.graph.extract import EntityExtractor
from rag_multihop.store import batches as plan
from rag_multihop.store import derive
from rag_multihop.store.batches import Progress
from rag_multihop.store.segment import StagedSegment
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.tables import Postings, build_postings, key_hashes, sorted_runs
from rag_multihop.store.views import QUALIFIER_SEPARATOR
from rag_multihop.text import title_key
from rag_multihop.types import Passage
from rag_multihop.validation import as_embedding_matrix, l2_normalize

PassageBatches = Iterable[tuple[Sequence[Passage], np.ndarray]]
"""Batches of passages with one vector each (rows of any scale unless said unit)."""


class _Strings:
    """A string column streamed to ``<name>.blob``; its offsets kept (8 bytes a row)."""

    def __init__(self, staged: StagedSegment, name: str) -> None:
        self.name = name
        self.blob = staged.column(f"{name}.blob", np.uint8)
        self.ends: list[np.ndarray] = []
        self.size = 0

    def extend(self, strings: Sequence[str]) -> None:
        encoded = [s.encode("utf-8") for s in strings]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        self.ends.append(self.size + np.cumsum(lengths))
        self.size += int(lengths.sum())
        self.blob.append(np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def offsets(self) -> np.ndarray:
        return np.concatenate([np.zeros(1, dtype=np.int64), *self.ends])

    def read(self, offsets: np.ndarray, start: int, end: int) -> list[str]:
        """Strings ``[start, end)`` (``offsets``: :meth:`offsets`), read back from disk."""
        data = self.blob.read(int(offsets[start]), int(offsets[end])).tobytes()
        base = int(offsets[start])
        bounds = (offsets[start : end + 1] - base).tolist()
        return [data[a:b].decode("utf-8") for a, b in itertools.pairwise(bounds)]


class _Table:
    """A CSR table (``<prefix>.rows``, ``.ptr`` and per-entry columns) streamed to disk."""

    def __init__(self, staged: StagedSegment, prefix: str, columns: dict[str, np.ndarray]):
        self.prefix = prefix
        self.files = {
            key: staged.column(key, value.dtype, value.shape[1:]) for key, value in columns.items()
        }
        self.pointers = [np.zeros(1, dtype=np.int64)]
        self.entries = 0

    def append(self, arrays: derive.Arrays) -> None:
        for key, column in self.files.items():
            column.append(arrays[key])
        self.pointers.append(arrays[f"{self.prefix}.ptr"][1:] + self.entries)
        self.entries += int(arrays[f"{self.prefix}.ptr"][-1])

    def pointer_array(self) -> np.ndarray:
        return np.concatenate(self.pointers)


def _postings(prefix: str, table: Postings) -> derive.Arrays:
    return {
        f"{prefix}.hash": table.hashes,
        f"{prefix}.ptr": table.pointers,
        f"{prefix}.val": table.values,
    }


def _unit_batches(
    batches: PassageBatches, dim: int, normalized: bool
) -> Iterator[tuple[list[Passage], np.ndarray]]:
    """The non-empty batches, checked, with unit vectors."""
    for passages, vectors in batches:
        passages = list(passages)
        if not passages:
            continue
        for p in passages:
            if not isinstance(p, Passage):
                raise TypeError(f"passages must be Passage objects, got {type(p).__name__}")
        matrix = as_embedding_matrix(vectors, name="vectors", dim=dim)
        if matrix.shape[0] != len(passages):
            raise ValueError(f"got {matrix.shape[0]} vectors for {len(passages)} passages")
        yield passages, matrix if normalized else l2_normalize(matrix)


def stream_arrays(
    staged: StagedSegment,
    batches: PassageBatches,
    settings: IndexSettings,
    extractor: EntityExtractor,
    *,
    dim: int,
    normalized: bool = False,
    batch_size: int = plan.DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
) -> derive.Arrays:
    """Build the first segment of the passages ``batches`` yield into ``staged``; the
    segment's arrays (the large ones memory-mapped from the files written, none of them
    read). ``dim``: the vectors' dimension; ``normalized``: they are unit rows already.
    Pass 2 reads the texts back ``batch_size`` at a time; ``progress`` is called after each
    batch of each pass (the total is the passages read so far while pass 1 streams)."""
    strings = {name: _Strings(staged, name) for name in ("ids", "titles", "texts", "names")}
    vectors = staged.column("vectors", np.float32, (dim,))
    qual = _Strings(staged, "title.qual")
    pieces = staged.column("piece.hash.tmp", np.uint64)
    ents = _Strings(staged, "ents")
    id_hashes: list[np.ndarray] = []
    subject: list[np.ndarray] = []
    piece_counts: list[np.ndarray] = []
    title_hashes: list[np.ndarray] = []
    title_rows: list[np.ndarray] = []
    first_words: set[str] = set()
    gkey_hashes: list[np.ndarray] = []
    gkey_rows: list[np.ndarray] = []
    ment_counts: list[np.ndarray] = []
    ment_ent = staged.column("ment.ent", np.int32)
    interned: dict[str, int] = {}
    dictionary = plan.DictionaryBuilder()
    n = 0
    for passages, unit in _unit_batches(batches, dim, normalized):
        vectors.append(unit)
        columns = plan.passage_batch(passages)
        for name, column in (("ids", "id"), ("titles", "title"), ("texts", "text")):
            strings[name].extend(columns[column])
        id_hashes.append(key_hashes(columns["id"]))
        read = plan.read_batch(columns, subjects=settings.subjects, extractor=extractor)
        strings["names"].extend([QUALIFIER_SEPARATOR.join(known) for known in read["names"]])
        subject.append(
            np.array(
                [
                    tuple(known) != (t,)
                    for known, t in zip(read["names"], columns["title"], strict=True)
                ],
                dtype=np.uint8,
            )
        )
        counts = np.array([len(keys) for keys in read["keys"]], dtype=np.int64)
        flat_keys = [key for keys in read["keys"] for key in keys]
        title_hashes.append(key_hashes(flat_keys))
        title_rows.append(np.repeat(np.arange(n, n + len(passages), dtype=np.int32), counts))
        qual.extend([q for quals in read["quals"] for q in quals])
        first_words.update(key.split(" ", 1)[0] for key in flat_keys)
        graph = [(row, title_key(t)) for row, t in enumerate(columns["title"], start=n)]
        gkey_hashes.append(key_hashes([key for _, key in graph if key]))
        gkey_rows.append(np.array([row for row, key in graph if key], dtype=np.int32))
        piece_counts.append(np.array([len(h) for h in read["pieces"]], dtype=np.int64))
        pieces.append(np.concatenate(read["pieces"]) if read["pieces"] else np.zeros(0, np.uint64))
        numbers = []
        fresh = []
        for entities in read["entities"]:
            for name in entities:
                number = interned.get(name)
                if number is None:
                    number = interned[name] = len(interned)
                    fresh.append(name)
                numbers.append(number)
        ents.extend(fresh)
        ment_counts.append(np.array([len(e) for e in read["entities"]], dtype=np.int64))
        ment_ent.append(np.array(numbers, dtype=np.int32))
        dictionary.add(read["keys"], read["quals"], columns["title"])
        n += len(passages)
        if progress is not None:
            progress(plan.READ_STAGE, n, n)

    # pass 2: links against the whole dictionary, texts read back from disk
    names = dictionary.finish(settings)
    del dictionary
    text_offsets = strings["texts"].offsets()
    empty_links = derive.link_table([], [])
    links = _Table(staged, "link", {k: v for k, v in empty_links.items() if k != "link.ptr"})
    empty_glinks = derive.graph_link_table([], [])
    glinks = _Table(staged, "glink", {k: v for k, v in empty_glinks.items() if k != "glink.ptr"})
    link_names = ("link.dst", "link.w", "link.nspan", "link.span", "link.sflag")
    for start in range(0, n, batch_size):
        end = min(start + batch_size, n)
        rows = list(range(start, end))
        texts = strings["texts"].read(text_offsets, start, end)
        found = plan.link_batch({"row": rows, "text": texts}, names)
        per_passage = [
            plan._links(*values) for values in zip(*(found[c] for c in link_names), strict=True)
        ]
        links.append(derive.link_table(rows, per_passage))
        glinks.append(derive.graph_link_table(rows, found["glink.dst"]))
        if progress is not None:
            progress(plan.LINK_STAGE, end, n)
    del names

    arrays: derive.Arrays = {}
    for key, strings_column in strings.items():
        arrays[f"{key}.off"] = strings_column.offsets()
    ids = build_postings(_cat(id_hashes, np.uint64), np.arange(n, dtype=np.int32))
    _check_unique(ids, strings["ids"], arrays["ids.off"])
    arrays |= _postings("id", ids)
    arrays["subject"] = _cat(subject, np.uint8)
    hashes = _cat(title_hashes, np.uint64)
    arrays |= _postings("title", build_postings(hashes, np.arange(len(hashes), dtype=np.int32)))
    arrays["title.row"] = _cat(title_rows, np.int32)
    arrays["title.qual.off"] = qual.offsets()
    arrays["first.hash"] = np.unique(key_hashes(sorted(first_words))).astype(np.uint64)
    arrays |= _postings(
        "gkey", build_postings(_cat(gkey_hashes, np.uint64), _cat(gkey_rows, np.int32))
    )
    arrays["ment.ptr"] = _pointers(ment_counts)
    arrays["ents.off"] = ents.offsets()
    arrays |= _postings(
        "ent",
        build_postings(key_hashes(interned), np.arange(len(interned), dtype=np.int32)),
    )
    del interned
    arrays["dead"] = np.zeros(0, dtype=np.int32)
    arrays["link.ptr"] = links.pointer_array()
    arrays["glink.ptr"] = glinks.pointer_array()
    arrays = {key: staged.save(key, value) for key, value in arrays.items()}
    written = staged.close_columns()
    arrays |= _piece_postings(staged, written.pop("piece.hash.tmp"), _pointers(piece_counts))
    (staged.folder / "piece.hash.tmp.npy").unlink()
    return arrays | written


def _cat(parts: Sequence[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _check_unique(ids: Postings, column: _Strings, offsets: np.ndarray) -> None:
    """``ValueError`` naming the ids that more than one passage has."""
    shared = np.flatnonzero(np.diff(ids.pointers) > 1)
    repeated: set[str] = set()
    for slot in shared.tolist():
        rows = ids.values[ids.pointers[slot] : ids.pointers[slot + 1]].tolist()
        seen = [column.read(offsets, row, row + 1)[0] for row in rows]
        repeated.update(i for i in seen if seen.count(i) > 1)
    if repeated:
        raise ValueError(f"passages repeat id(s) {sorted(repeated)[:5]}; ids must be unique")


def _pointers(counts: Sequence[np.ndarray]) -> np.ndarray:
    out = np.zeros(sum(len(c) for c in counts) + 1, dtype=np.int64)
    if len(out) > 1:
        np.cumsum(np.concatenate(counts), out=out[1:])
    return out


def _piece_postings(
    staged: StagedSegment, hashes: np.ndarray, pointers: np.ndarray
) -> derive.Arrays:
    """The word → rows postings (``piece.*``) of the pieces written per passage (``hashes``
    laid end to end, passage ``i``'s at ``pointers[i]:pointers[i + 1]``), as
    :func:`~.derive.hashed_piece_arrays` makes them, with one sort and no row array."""
    flat = np.array(hashes, dtype=np.uint64)  # a copy in anonymous memory: sorted once
    order = np.argsort(flat, kind="stable")
    flat = flat[order]
    unique, starts = sorted_runs(flat)
    del flat
    rows = (np.searchsorted(pointers, order, side="right") - 1).astype(np.int32)
    del order
    arrays = {"piece.hash": unique, "piece.ptr": starts, "piece.val": rows}
    return {key: staged.save(key, value) for key, value in arrays.items()}
