"""Folders as users have them: PDF, HTML, Markdown and text files read by a framework's own
readers, cut into passages titled "<file> › <nearest heading>", and kept in a persistent
:class:`~rag_multihop.store.CorpusIndex` that is updated file by file.

- **Reading** (:class:`FolderReader`): each chat brings its framework's reader
  (``LlamaIndexFolderReader`` of ``llama_index_chat``: ``SimpleDirectoryReader`` with
  ``PDFReader`` and the Markdown / HTML node parsers; ``HaystackFolderReader`` of
  ``haystack_chat``: a ``FileTypeRouter`` before ``PyPDFToDocument``, ``HTMLToDocument`` and
  ``TextFileToDocument``). A reader turns one file into :class:`Section` s; this module does
  the rest, framework-free.
- **Passages** (:func:`file_passages`): a section's text cut by :func:`split_passages`;
  ids are ``<path in the folder>#<chunk number>`` (a name's bytes that are not UTF-8
  written ``\\xNN``, :func:`folder_name`).
- **Updating** (:func:`sync_folder`): a file whose bytes are unchanged since the last run
  is neither read nor embedded again; a changed file's passages are upserted (its surplus
  old ids deleted), a removed file's passages deleted. Progress goes to a callback
  (:class:`IndexProgress`: stage, counts, passages/s, ETA).

Example:
    >>> [p.title for p in file_passages("notes/rope_works.md", [Section("Later years", "Ash.")])]
    ['rope works › Later years']
    >>> file_title("notes/rope_works.md", "Later years")
    'rope works › Later years'
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import numpy as np
from chatkit import ChatInputError, clean_text

from rag_multihop import Passage

logger = logging.getLogger(__name__)

SUFFIXES = (".pdf", ".html", ".htm", ".md", ".markdown", ".txt")
"""The file types the chats read (others are skipped and named)."""
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
"""Files that must be UTF-8 text (checked before a reader sees them)."""
CHUNK_CHARS = 600
"""Passages are cut from paragraphs up to this many characters; no passage is longer (a
"word" longer than this, such as a line without spaces, is cut into pieces of this size)."""
TITLE_CHARS = 200
"""Titles ("<file> › <heading>") are cut to this many characters."""
TITLE_SEPARATOR = " › "
CHUNKER_VERSION = 3
EMBED_BATCH = 64
"""Passages embedded per encoder call (progress is reported after each)."""
STATE_FILE = "files.json"


class FolderError(ChatInputError):
    """A folder the chat cannot use (missing, empty, nothing readable); the message names
    the folder and what was skipped."""


class UnreadableFile(Exception):
    """Raised by a :class:`FolderReader` for a file it cannot turn into text; the message
    says why (the caller names the file)."""


@dataclass(frozen=True)
class Section:
    """A run of a file's text under its nearest heading (``""`` before any heading)."""

    heading: str
    text: str


class FolderReader(Protocol):
    """What a chat's framework reader provides: a name (it keys the cache: another reader
    may cut the same file differently) and one file's sections."""

    name: str

    def read(self, path: Path) -> list[Section]: ...


# ----------------------------------------------------------------------------- sections


def page_sections(pages: Sequence[str]) -> list[Section]:
    """One section per PDF page with text, headed ``page N`` (1-based).

    >>> page_sections(["One.", "  ", "Three."])
    [Section(heading='page 1', text='One.'), Section(heading='page 3', text='Three.')]
    """
    return [Section(f"page {n}", t.strip()) for n, t in enumerate(pages, start=1) if t.strip()]


# ----------------------------------------------------------------------------- passages


def _words(paragraph: str, limit: int) -> Iterator[str]:
    """The paragraph's words, any longer than ``limit`` cut into ``limit``-sized pieces."""
    for word in paragraph.split():
        for start in range(0, len(word), limit):
            yield word[start : start + limit]


def split_passages(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Paragraphs joined up to ``limit`` characters; longer paragraphs cut at spaces, and
    words longer than ``limit`` cut, so that no passage exceeds ``limit`` characters.

    >>> [len(c) for c in split_passages("One.\\n\\nTwo.\\n\\n" + "word " * 30, limit=40)]
    [10, 39, 39, 39, 29]
    >>> [len(c) for c in split_passages("x" * 100, limit=40)]
    [40, 40, 20]
    """
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        line = ""
        for word in _words(paragraph, limit):
            if line and len(line) + 1 + len(word) > limit:
                pieces.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        if line:
            pieces.append(line)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= limit:
            chunks[-1] = f"{chunks[-1]}\n\n{piece}"
        else:
            chunks.append(piece)
    return chunks


def file_title(relative: str, heading: str) -> str:
    """``<file name> › <heading>`` (the name without suffix, ``_`` read as a space), or the
    name alone without a heading; cut to :data:`TITLE_CHARS`."""
    name = PurePosixPath(relative).stem.replace("_", " ")
    title = f"{name}{TITLE_SEPARATOR}{heading}" if heading else name
    return " ".join(title.split())[:TITLE_CHARS]


def file_passages(relative: str, sections: Sequence[Section]) -> list[Passage]:
    """The passages of one file: each section's text cut by :func:`split_passages`, titled
    by :func:`file_title`, numbered across the file (``<relative>#<n>``)."""
    passages: list[Passage] = []
    for section in sections:
        title = file_title(relative, clean_text(section.heading))
        for chunk in split_passages(clean_text(section.text)):
            passages.append(Passage(f"{relative}#{len(passages)}", chunk, title=title))
    return passages


# ----------------------------------------------------------------------------- scanning


@dataclass(frozen=True)
class FolderFile:
    """A file of the folder the chats can read: its path in the folder, on disk, and the
    SHA-256 of its bytes (what tells a changed file from an unchanged one)."""

    relative: str
    path: Path
    digest: str


def _hidden(relative: PurePosixPath) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def folder_name(relative: PurePosixPath) -> str:
    """``relative`` as valid Unicode: the bytes of a name that are not UTF-8 (Python reads
    them as lone surrogates) written ``\\xNN``, the same at every run and distinct for
    distinct names.

    >>> folder_name(PurePosixPath("notes/caf\\udce9 menu.txt"))
    'notes/caf\\\\xe9 menu.txt'
    """
    return os.fsencode(relative.as_posix()).decode("utf-8", "backslashreplace")


def check_folder(folder: Path) -> None:
    """:class:`FolderError` unless ``folder`` is a folder."""
    if not folder.is_dir():
        raise FolderError(f"corpus folder {str(folder)!r} does not exist or is not a folder")


def scan_folder(folder: Path) -> tuple[list[FolderFile], list[str]]:
    """The readable files under ``folder`` (hidden files and folders left out) and the
    skipped ones, each ``"<path> (<why>)"`` and logged: other suffixes, files that cannot be
    read (vanished, permissions, I/O errors), text files that are binary or not UTF-8."""
    check_folder(folder)
    files: list[FolderFile] = []
    skipped: list[str] = []

    def skip(relative: str, why: str) -> None:
        logger.warning("skipping %s: %s", relative, why)
        skipped.append(f"{relative} ({why})")

    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = PurePosixPath(path.relative_to(folder).as_posix())
        if _hidden(relative):
            continue
        name = folder_name(relative)
        if path.suffix.lower() not in SUFFIXES:
            skip(name, "not PDF, HTML, Markdown or text")
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            skip(name, f"cannot be read: {exc.strerror or type(exc).__name__}")
            continue
        if path.suffix.lower() in TEXT_SUFFIXES:
            try:
                if b"\x00" in data[:8192]:
                    raise UnicodeError
                data.decode("utf-8")
            except UnicodeError:
                skip(name, "binary or not UTF-8")
                continue
        files.append(FolderFile(name, path, hashlib.sha256(data).hexdigest()))
    return files, skipped


def read_file(file: FolderFile, reader: FolderReader) -> list[Passage]:
    """``file``'s passages through ``reader``; :class:`UnreadableFile` naming the file when
    the reader fails or finds no text."""
    try:
        sections = reader.read(file.path)
    except Exception as exc:  # a reader's own error: the file is skipped, the chat goes on
        raise UnreadableFile(f"{file.relative} ({reader.name} could not read it: {exc})") from exc
    passages = file_passages(file.relative, sections)
    if not passages:
        raise UnreadableFile(f"{file.relative} (no text found by {reader.name})")
    return passages


def _no_text(folder: Path, skipped: Sequence[str]) -> FolderError:
    detail = f"; skipped: {', '.join(skipped[:5])}" if skipped else " (the folder is empty)"
    return FolderError(
        f"no readable text in {str(folder)!r}: give a folder of PDF, HTML, Markdown (.md) or "
        f"UTF-8 text (.txt) files{detail}"
    )


def read_folder(folder: Path, reader: FolderReader) -> list[Passage]:
    """Every passage of ``folder`` (no index, no cache): files read by ``reader``, skipped
    files logged and named; :class:`FolderError` when no file gives text."""
    files, skipped = scan_folder(folder)
    passages: list[Passage] = []
    for file in files:
        try:
            passages.extend(read_file(file, reader))
        except UnreadableFile as exc:
            logger.warning("skipping %s", exc)
            skipped.append(str(exc))
    if not passages:
        raise _no_text(folder, skipped)
    return passages


# ----------------------------------------------------------------------------- progress


PROGRESS_UNITS = {"reading": "files", "embedding": "passages", "indexing": "passages"}


@dataclass(frozen=True)
class IndexProgress:
    """Where indexing a folder stands: ``stage`` (``reading`` files, ``embedding``
    passages, ``indexing``, ``ready``), ``done`` of ``total`` and the seconds spent on it.

    >>> IndexProgress("embedding", 200, 1000, 10.0).describe()
    'embedding 200/1,000 passages · 20.0 passages/s · ETA 40 s'
    """

    stage: str
    done: int
    total: int
    elapsed_s: float

    @property
    def rate(self) -> float | None:
        """Items per second so far (``None`` before the first one)."""
        return self.done / self.elapsed_s if self.done and self.elapsed_s > 0 else None

    @property
    def eta_s(self) -> float | None:
        rate = self.rate
        return None if rate is None else (self.total - self.done) / rate

    def describe(self) -> str:
        """One line for a terminal or a page."""
        if self.stage == "ready":
            return f"ready: {self.total:,} passages ({self.elapsed_s:.1f} s)"
        unit = PROGRESS_UNITS.get(self.stage, "")
        line = f"{self.stage} {self.done:,}/{self.total:,} {unit}".rstrip()
        if self.rate is not None and self.stage != "indexing":
            eta = self.eta_s or 0.0
            when = f"{eta:.0f} s" if eta < 90 else f"{eta / 60:.0f} min"
            line += f" · {self.rate:.1f} {unit}/s · ETA {when}"
        return line


ProgressCallback = Callable[[IndexProgress], None]


def _ignore(progress: IndexProgress) -> None:
    return None


# ----------------------------------------------------------------------------- the index


@dataclass(frozen=True)
class FolderSync:
    """The folder's index after :func:`sync_folder`: its path, live passages and vectors."""

    index_path: Path
    passages: list[Passage]
    vectors: np.ndarray


def folder_cache(folder: Path, reader: FolderReader, encoder: Any, cache: Path) -> Path:
    """The cache folder of ``folder`` read by ``reader`` and embedded by ``encoder``."""
    key = f"{folder.resolve()}\0{reader.name}\0{encoder.name}\0{CHUNKER_VERSION}"
    return cache / f"folder-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _load_state(path: Path) -> dict[str, dict[str, Any]]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _save_state(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")  # its own: sessions may save at once
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _embed(
    encoder: Any, passages: Sequence[Passage], progress: ProgressCallback, dim: int
) -> np.ndarray:
    start, parts = time.perf_counter(), []
    texts = [p.embedding_text for p in passages]
    for begin in range(0, len(texts), EMBED_BATCH):
        batch = texts[begin : begin + EMBED_BATCH]
        parts.append(np.asarray(encoder.encode(batch, show_progress=False), dtype=np.float32))
        done = begin + len(batch)
        progress(IndexProgress("embedding", done, len(texts), time.perf_counter() - start))
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


def sync_folder(
    folder: Path,
    reader: FolderReader,
    encoder: Any,
    cache: Path,
    progress: ProgressCallback | None = None,
) -> FolderSync:
    """Bring the persistent index of ``folder`` up to date and return its passages.

    Files are compared by the SHA-256 of their bytes with the last run (``files.json``
    beside the index): only new or changed files are read and embedded, their passages
    upserted (ids ``<file>#<n>``) and their surplus old ids deleted; removed or now
    unreadable files' passages are deleted. An index another session created meanwhile is
    opened and updated the same way. :class:`FolderError` when no file gives text (the
    index is then left as it was).
    """
    from rag_multihop.store import CorpusIndex
    from rag_multihop.store.index import FORMAT_VERSION

    report = progress or _ignore
    root = folder_cache(folder, reader, encoder, cache)
    index_path, state_path = root / f"corpus-v{FORMAT_VERSION}.idx", root / STATE_FILE
    files, skipped = scan_folder(folder)
    exists = (index_path / "CURRENT").is_file()
    old = _load_state(state_path) if exists else {}
    todo = [f for f in files if old.get(f.relative, {}).get("sha256") != f.digest]
    new_passages: list[Passage] = []
    todo_names = {f.relative for f in todo}
    state = {f.relative: old[f.relative] for f in files if f.relative not in todo_names}
    start = time.perf_counter()
    for n, file in enumerate(todo, start=1):
        try:
            passages = read_file(file, reader)
        except UnreadableFile as exc:
            logger.warning("skipping %s", exc)
            skipped.append(str(exc))
        else:
            new_passages.extend(passages)
            state[file.relative] = {"sha256": file.digest, "ids": [p.id for p in passages]}
        report(IndexProgress("reading", n, len(todo), time.perf_counter() - start))
    if not state:
        raise _no_text(folder, skipped)
    kept = {i for entry in state.values() for i in entry["ids"]}
    vectors = _embed(encoder, new_passages, report, encoder.dim)
    root.mkdir(parents=True, exist_ok=True)
    if exists:
        index = CorpusIndex(index_path)
    else:
        try:
            index = CorpusIndex.create(index_path, dim=encoder.dim, encoder=encoder)
        except FileExistsError:  # another session created it since: update it as usual
            index = CorpusIndex(index_path)
    if exists and index.names_outdated():  # written by an older release: names read anew
        logger.info("%s: compacting (its names were read by another name reader)", index_path)
        index.compact()
    # removed, shrunk or now unreadable files' ids, and any a run killed before saving left
    doomed = [i for i in index.snapshot().corpus.ids if i not in kept]
    report(IndexProgress("indexing", 0, len(new_passages) + len(doomed), 0.0))
    index.delete(doomed, missing_ok=True)
    index.upsert(new_passages, vectors)
    _save_state(state_path, state)
    snapshot = index.snapshot()
    report(IndexProgress("ready", snapshot.n_live, snapshot.n_live, time.perf_counter() - start))
    removed = sorted(set(old) - set(state))
    if todo or removed:
        logger.info("%s: %d file(s) read, %d removed", folder, len(todo), len(removed))
    return FolderSync(index_path, list(snapshot.corpus), np.asarray(snapshot.vectors))


def prune_siblings(keep: Path) -> None:
    """Remove the other ``derived-*`` folders beside ``keep`` (state of older contents)."""
    for other in keep.parent.glob("derived-*"):
        if other != keep and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
