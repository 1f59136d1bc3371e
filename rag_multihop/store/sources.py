"""Which passages each source document wrote to a corpus index, so that ingesting a changed
document replaces its passages.

Frameworks split a source document (a LlamaIndex ``ref_doc_id``, a Haystack splitter's
``meta["source_id"]``) into chunks whose ids are new on every run: re-ingesting a changed
file gives new chunk ids, and upserting them alone would leave the old chunks in the index
for good. :func:`write_sources` upserts a batch and deletes, in the same index version, the
passages an earlier write of the same sources left that the batch no longer holds (a
reader never sees a document half replaced); :func:`delete_sources` deletes every
passage of some sources. A batch holds all the passages of each source it names (as an
ingestion pipeline sends them: a document's chunks are made and written together).

The map lives beside the segments in ``sources.sqlite`` (SQLite from the standard library:
each write changes the rows of the sources it names, in a transaction; a table of one row
per passage, keyed by passage id, so a passage belongs to one source). It is kept a
superset of the truth: the batch's ids are recorded before the index is written and the
replaced ids forgotten only after, so a writer killed in between leaves ids that the next
write of that source deletes again (``missing_ok``), never an untracked passage.

Example (a toy 2-dimensional "encoder": vectors are given):
    >>> import tempfile, numpy as np
    >>> from rag_multihop import Passage
    >>> index = CorpusIndex.create(tempfile.mkdtemp() + "/idx", dim=2)
    >>> first = [Passage("a1", "Rope is a film."), Passage("a2", "It is by Hitchcock.")]
    >>> _ = write_sources(index, first, np.eye(2), ["a.txt", "a.txt"])
    >>> _ = write_sources(index, [Passage("a3", "Rope is a 1948 film.")], np.eye(2)[:1], ["a.txt"])
    >>> index.snapshot().corpus.ids
    ['a3']
    >>> _ = delete_sources(index, ["a.txt"])
    >>> index.snapshot().n_live
    0
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager

import numpy as np

from rag_multihop._atomic import ArtifactError
from rag_multihop.store.index import CorpusIndex
from rag_multihop.types import Passage
from rag_multihop.validation import check_source_ids, check_unicode

SOURCES_FILE = "sources.sqlite"
BUSY_TIMEOUT_S = 30.0


@contextmanager
def _connected(index: CorpusIndex) -> Iterator[sqlite3.Connection]:
    """The map's connection for the block; a locked, corrupt or unreadable map is an
    :class:`ArtifactError` naming the file (the index itself is untouched by it)."""
    path = index.path / SOURCES_FILE
    try:
        with closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)) as connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS sources "
                "(passage TEXT PRIMARY KEY, source TEXT NOT NULL)"
            )
            connection.execute("CREATE INDEX IF NOT EXISTS by_source ON sources (source)")
            yield connection
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            raise ArtifactError(
                f"{path} is locked by another connection (waited {BUSY_TIMEOUT_S:g} s); "
                "retry the write"
            ) from None
        raise ArtifactError(f"{path} is unusable: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise ArtifactError(
            f"{path} is not a sources map ({exc}); delete it to start a new one "
            "(the index keeps its passages)"
        ) from None


def _sources_of(connection: sqlite3.Connection, passages: Iterable[str]) -> dict[str, str]:
    found = {}
    for passage in dict.fromkeys(passages):
        row = connection.execute("SELECT source FROM sources WHERE passage = ?", (passage,))
        for (source,) in row:
            found[passage] = source
    return found


def _passages_of(connection: sqlite3.Connection, sources: Iterable[str]) -> list[str]:
    found: list[str] = []
    for source in dict.fromkeys(sources):
        rows = connection.execute("SELECT passage FROM sources WHERE source = ?", (source,))
        found.extend(passage for (passage,) in rows)
    return found


def _forget(connection: sqlite3.Connection, passages: Sequence[str]) -> None:
    with connection:
        connection.executemany("DELETE FROM sources WHERE passage = ?", [(p,) for p in passages])


def write_sources(
    index: CorpusIndex,
    passages: Sequence[Passage],
    vectors: np.ndarray,
    sources: Sequence[str | None],
) -> int:
    """Upsert ``passages`` (``sources[i]``: the source document of ``passages[i]``, ``None``
    for one that has none) and delete the passages earlier writes of those sources left
    that this batch does not hold; the index's new version."""
    if isinstance(sources, str):
        raise TypeError("sources must be a sequence of source ids (one per passage), not a str")
    if len(sources) != len(passages):
        raise ValueError(f"got {len(sources)} sources for {len(passages)} passages")
    named = {p.id: s for p, s in zip(passages, sources, strict=True) if s is not None}
    bad = [s for s in named.values() if not isinstance(s, str) or not s]
    if bad:
        raise ValueError(f"a source must be a non-empty string, got {bad[0]!r}")
    check_source_ids(list(named), list(named.values()))
    unnamed = [p.id for p, s in zip(passages, sources, strict=True) if s is None]
    if not named and not (index.path / SOURCES_FILE).exists():
        return index.upsert(passages, vectors)
    with _connected(index) as connection:
        replaced = [p for p in _passages_of(connection, named.values()) if p not in named]
        before = _sources_of(connection, named)
        with connection:  # the superset first: the batch's ids recorded before the write
            connection.executemany(
                "INSERT INTO sources (passage, source) VALUES (?, ?) "
                "ON CONFLICT (passage) DO UPDATE SET source = excluded.source",
                list(named.items()),
            )
        try:
            version = index.upsert(passages, vectors, delete=replaced)
        except Exception:  # a refused write: each passage back under its old source
            with connection:
                connection.executemany(
                    "UPDATE sources SET source = ? WHERE passage = ?",
                    [(source, passage) for passage, source in before.items()],
                )
                connection.executemany(
                    "DELETE FROM sources WHERE passage = ?",
                    [(p,) for p in named if p not in before],
                )
            raise
        # a passage written without a source belongs to none any more
        _forget(connection, [*replaced, *unnamed])
    return version


def delete_sources(index: CorpusIndex, sources: Iterable[str]) -> int:
    """Delete every passage written for ``sources``; the index's new version."""
    if isinstance(sources, str):
        raise TypeError("sources must be a collection of source ids, not one string")
    wanted = list(dict.fromkeys(sources))
    if any(not isinstance(s, str) or not s for s in wanted):
        raise ValueError(f"sources must be non-empty strings, got {wanted[:3]}")
    for source in wanted:
        if not source.isascii():
            check_unicode(source, f"source {source!r}")
    if not wanted or not (index.path / SOURCES_FILE).exists():
        return index.version
    with _connected(index) as connection:
        doomed = _passages_of(connection, wanted)
        version = index.delete(doomed, missing_ok=True)
        _forget(connection, doomed)
    return version
