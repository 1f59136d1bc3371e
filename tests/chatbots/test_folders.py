"""Folders as users have them: PDF, HTML, Markdown and text through each framework's
readers, headings kept as titles, skipped files named, and the persistent index updated
file by file (counted by the texts the encoder is asked to embed)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chatkit
import folders
import numpy as np
import pytest
from chatkit import ChatInputError
from folder_files import EXPECTED, tiny_pdf, write_folder
from folders import IndexProgress

from rag_multihop.store import CorpusIndex


class CountingEncoder:
    """The hashing encoder, recording every text it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def encode(self, texts: list[str], *, show_progress: bool = False) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.encode(texts)

    def take(self) -> list[str]:
        taken, self.texts = self.texts, []
        return taken


def test_every_file_type_is_read_with_headings_as_titles(tmp_path: Path, folder_reader) -> None:
    passages = folders.read_folder(write_folder(tmp_path), folder_reader)
    assert [(p.id, p.title) for p in passages] == EXPECTED
    text = {p.id: p.text for p in passages}
    assert text["guide/manual.pdf#0"].startswith("Installing the rope winder")
    assert text["notes.md#1"] == "Born in Kelmsby in 1811."
    assert "# not a heading" in text["notes.md#2"]  # a code block's line is no heading
    assert "closed in 1931" in text["rope_history.html#1"]


def test_unsupported_and_corrupt_files_are_skipped_and_named(
    tmp_path: Path, folder_reader, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "good.md").write_text("# Zelnov\n\nA town.")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is no PDF")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01binary")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: main")  # hidden: not even named
    passages = folders.read_folder(tmp_path, folder_reader)
    assert [(p.id, p.title) for p in passages] == [("good.md#0", "good › Zelnov")]
    skipped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping")]
    assert skipped[:2] == [
        "skipping blob.txt: binary or not UTF-8",
        "skipping photo.png: not PDF, HTML, Markdown or text",
    ]
    assert len(skipped) == 3
    assert skipped[2].startswith(f"skipping broken.pdf ({folder_reader.name} could not read it: ")
    assert ".git" not in caplog.text


def test_a_byte_order_mark_changes_nothing_in_either_chat(
    tmp_path: Path, llama_index_reader, haystack_reader
) -> None:
    bom = "\ufeff"
    (tmp_path / "b.md").write_text(f"{bom}# Heading\n\nBody.\n\n## Later\n\nMore.\n")
    (tmp_path / "a.txt").write_text(f"{bom}Plain text.")
    llama_index, haystack = (
        [(p.id, p.title, p.text) for p in folders.read_folder(tmp_path, reader)]
        for reader in (llama_index_reader, haystack_reader)
    )
    assert (
        llama_index
        == haystack
        == [
            ("a.txt#0", "a", "Plain text."),
            ("b.md#0", "b › Heading", "Body."),
            ("b.md#1", "b › Later", "More."),
        ]
    )


def test_empty_or_unusable_folder_is_a_clear_error(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    def load(folder: Path) -> Any:
        return chatkit.load_chat_corpus(
            folder, reader=llama_index_reader, encoder=hashing_encoder, cache=tmp_path / "c"
        )

    (tmp_path / "empty").mkdir()
    with pytest.raises(ChatInputError, match=r"no readable text in .*empty.*the folder is empty"):
        load(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "scan.pdf").write_bytes(tiny_pdf([""]))  # a page without text
    (tmp_path / "bad" / "sheet.xlsx").write_bytes(b"PK")
    with pytest.raises(
        ChatInputError,
        match=r"skipped: sheet.xlsx \(not PDF, HTML, Markdown or text\), "
        r"scan.pdf \(no text found by llama-index\)",
    ):
        load(tmp_path / "bad")
    with pytest.raises(ChatInputError, match="does not exist"):
        load(tmp_path / "missing")
    with pytest.raises(TypeError, match="reader="):
        chatkit.load_chat_corpus(tmp_path / "bad", encoder=hashing_encoder, cache=tmp_path)


def _index_contents(path: Path) -> dict[str, tuple[str, str, bytes]]:
    snapshot = CorpusIndex(path).snapshot()
    vectors = np.asarray(snapshot.vectors)
    return {
        p.id: (p.title, p.text, np.round(v, 5).tobytes())
        for p, v in zip(snapshot.corpus, vectors, strict=True)
    }


def _loader(docs: Path, reader: Any, encoder: Any, cache: Path) -> Callable[[], Any]:
    """The chats' corpus load of ``docs`` into ``cache``, to be called once per run."""
    return lambda: chatkit.load_chat_corpus(docs, reader=reader, encoder=encoder, cache=cache)


def test_a_changed_or_removed_file_updates_only_its_passages(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    docs = write_folder(tmp_path / "docs")
    (docs / "long.md").write_text("# Long\n\n" + "\n\n".join(f"Part {i} " * 60 for i in range(4)))
    encoder = CountingEncoder(hashing_encoder)

    def load() -> chatkit.ChatCorpus:
        return chatkit.load_chat_corpus(
            docs, reader=llama_index_reader, encoder=encoder, cache=tmp_path / "cache"
        )

    first = load()
    every = {p.embedding_text for p in first.corpus}
    assert every <= set(encoder.take())  # all passages (and the encoder's fingerprint texts)
    index = CorpusIndex(first.corpus_index())
    version = index.version

    again = load()
    assert encoder.take() == [] and index.version == version  # nothing read, nothing written
    assert again.corpus.ids == first.corpus.ids

    long_ids = [i for i in first.corpus.ids if i.startswith("long.md#")]
    assert len(long_ids) == 4
    (docs / "long.md").write_text("# Long\n\nNow one short part.")  # 4 passages -> 1
    changed = load()
    [passage] = [p for p in changed.corpus if p.id.startswith("long.md#")]
    assert encoder.take() == [passage.embedding_text]  # only the changed file's passage
    assert passage.id == "long.md#0" and passage.title == "long › Long"
    assert set(changed.corpus.ids) == set(first.corpus.ids) - set(long_ids[1:])

    (docs / "zelnov.txt").unlink()
    removed = load()
    assert encoder.take() == []
    assert "zelnov.txt#0" not in removed.corpus.ids
    assert len(removed.corpus) == len(changed.corpus) - 1 == removed.vectors.shape[0]
    assert removed.corpus_index() == first.corpus_index()

    fresh = chatkit.load_chat_corpus(
        docs, reader=llama_index_reader, encoder=hashing_encoder, cache=tmp_path / "fresh"
    )
    assert _index_contents(removed.corpus_index()) == _index_contents(fresh.corpus_index())


class RacingReader:
    """Reads like ``inner``, but before its first file another session syncs the folder
    (``other``), creating the index this session found missing."""

    def __init__(self, inner: Any, other: Callable[[], Any]) -> None:
        self.name, self.inner, self.other = inner.name, inner, other

    def read(self, path: Path) -> list[folders.Section]:
        other, self.other = self.other, lambda: None
        other()
        return self.inner.read(path)


def test_a_session_finding_the_index_created_meanwhile_updates_it(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    docs = write_folder(tmp_path / "docs")
    other = _loader(docs, llama_index_reader, hashing_encoder, tmp_path / "cache")
    racing = RacingReader(llama_index_reader, other)
    corpus = _loader(docs, racing, hashing_encoder, tmp_path / "cache")()
    assert [(p.id, p.title) for p in corpus.corpus] == EXPECTED
    assert set(CorpusIndex(corpus.corpus_index()).snapshot().corpus.ids) == set(corpus.corpus.ids)


def test_an_index_whose_names_an_older_release_read_is_compacted_then_updated(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    docs = write_folder(tmp_path / "docs")
    load = _loader(docs, llama_index_reader, hashing_encoder, tmp_path / "cache")
    index = CorpusIndex(load().corpus_index())
    manifest = index.path / "manifests" / f"v-{index.version:06d}.json"
    record = json.loads(manifest.read_text())
    record["names_version"] -= 1  # as an older release wrote it
    manifest.write_text(json.dumps(record))
    assert index.names_outdated()

    (docs / "added.md").write_text("# Added\n\nMarit Hallendor was born in Oslo.")
    updated = load()  # a plain add would refuse to mix the two readers' names
    assert not index.names_outdated()
    assert "added.md#0" in updated.corpus.ids


def test_a_run_killed_before_saving_its_file_list_is_repaired(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    docs = write_folder(tmp_path / "docs")
    load = _loader(docs, llama_index_reader, hashing_encoder, tmp_path / "cache")
    first = load()
    (first.corpus_index().parent / folders.STATE_FILE).unlink()
    (docs / "notes.md").unlink()
    again = load()
    assert not any(i.startswith("notes.md#") for i in again.corpus.ids)
    assert set(CorpusIndex(again.corpus_index()).snapshot().corpus.ids) == set(again.corpus.ids)


def test_progress_reports_each_stage_with_rate_and_eta(
    tmp_path: Path, llama_index_reader, hashing_encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_folder(tmp_path / "docs")
    (docs / "many.txt").write_text("\n\n".join(f"Line {i} " * 80 for i in range(150)))
    monkeypatch.setattr(folders, "EMBED_BATCH", 50)
    seen: list[IndexProgress] = []
    corpus = chatkit.load_chat_corpus(
        docs,
        reader=llama_index_reader,
        encoder=hashing_encoder,
        cache=tmp_path / "cache",
        progress=seen.append,
    )
    stages = [p.stage for p in seen]
    assert stages == sorted(stages, key=["reading", "embedding", "indexing", "ready"].index)
    assert [p.done for p in seen if p.stage == "reading"] == [1, 2, 3, 4, 5]
    embedding = [p for p in seen if p.stage == "embedding"]
    total = len(corpus.corpus)
    assert [p.done for p in embedding] == [*range(50, total, 50), total]
    assert all(p.total == total for p in embedding)
    assert seen[-1].stage == "ready" and seen[-1].total == total
    assert " passages/s · ETA " in embedding[0].describe()


def test_terminal_progress_prints_a_line_per_stage() -> None:
    out = io.StringIO()
    report = chatkit.TerminalProgress(out, every_s=3600)
    for progress in [
        IndexProgress("reading", 1, 2, 0.1),
        IndexProgress("reading", 2, 2, 0.2),
        IndexProgress("embedding", 64, 640, 2.0),
        IndexProgress("embedding", 128, 640, 4.0),  # within every_s: not printed
        IndexProgress("embedding", 640, 640, 20.0),
        IndexProgress("ready", 640, 640, 21.0),
    ]:
        report(progress)
    assert out.getvalue().splitlines() == [
        "  reading 1/2 files · 10.0 files/s · ETA 0 s",
        "  reading 2/2 files · 10.0 files/s · ETA 0 s",
        "  embedding 64/640 passages · 32.0 passages/s · ETA 18 s",
        "  embedding 640/640 passages · 32.0 passages/s · ETA 0 s",
        "  ready: 640 passages (21.0 s)",
    ]


def test_docstring_examples_run() -> None:
    import doctest

    assert doctest.testmod(folders).failed == 0


def test_a_missing_reader_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    import llama_index_chat

    monkeypatch.setitem(sys.modules, "llama_index.readers.file", None)
    with pytest.raises(ImportError, match=r"pip install -r examples/chatbots/requirements.txt"):
        llama_index_chat.LlamaIndexFolderReader()
