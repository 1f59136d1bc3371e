"""What the chats read: corpus folders with unreadable files and huge lines, and questions
made of invisible characters or terminal escape sequences."""

from __future__ import annotations

import io
import os
from pathlib import Path

import chatkit
import folders
import pytest
from chatkit import ChatInputError, Retrieval, Source, TurnAccount, TurnStream

from rag_multihop.llm import LLMSettings
from rag_multihop.store import CorpusIndex

LOCAL = LLMSettings("local")


def test_a_file_with_an_io_error_is_skipped_and_named(
    tmp_path: Path, llama_index_reader, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "good.txt").write_text("Zelnov is a town.")
    (tmp_path / "broken.txt").symlink_to("/proc/self/mem")  # a regular file that reads EIO
    passages = folders.read_folder(tmp_path, llama_index_reader)
    assert [p.id for p in passages] == ["good.txt#0"]
    assert "broken.txt" in caplog.text and "cannot be read" in caplog.text


def test_a_file_that_vanishes_while_loading_is_skipped(
    tmp_path: Path,
    llama_index_reader,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "a.txt").write_text("Alpha is a river.")
    (tmp_path / "gone.md").write_text("# Gone\n\nDeleted by another program.")
    listed = Path.is_file

    def listed_then_deleted(path: Path) -> bool:  # the folder was listed, then the file went
        found = listed(path)
        if path.name == "gone.md" and found:
            path.unlink()
        return found

    monkeypatch.setattr(Path, "is_file", listed_then_deleted)
    assert [p.id for p in folders.read_folder(tmp_path, llama_index_reader)] == ["a.txt#0"]
    assert "gone.md" in caplog.text


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_skipped(
    tmp_path: Path, llama_index_reader, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a.txt").write_text("Alpha is a river.")
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    secret.chmod(0)
    assert [p.id for p in folders.read_folder(tmp_path, llama_index_reader)] == ["a.txt#0"]
    assert "secret.txt" in caplog.text


def test_only_unreadable_files_is_a_clear_error(tmp_path: Path, llama_index_reader) -> None:
    (tmp_path / "broken.txt").symlink_to("/proc/self/mem")
    with pytest.raises(ChatInputError, match=r"skipped: broken.txt \(cannot be read"):
        folders.read_folder(tmp_path, llama_index_reader)


def test_a_file_whose_name_is_not_utf8_is_read_under_a_stable_name(
    tmp_path: Path, folder_reader, hashing_encoder
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text("Zelnov is a town on the Kelm.")
    (docs / os.fsdecode(b"caf\xe9 notes.txt")).write_text("Cafe notes.")  # Latin-1 é

    def load() -> chatkit.ChatCorpus:
        return chatkit.load_chat_corpus(
            docs, reader=folder_reader, encoder=hashing_encoder, cache=tmp_path / "cache"
        )

    corpus = load()
    assert corpus.corpus.ids == ["caf\\xe9 notes.txt#0", "good.txt#0"]
    assert corpus.corpus["caf\\xe9 notes.txt#0"].title == "caf\\xe9 notes"
    version = CorpusIndex(corpus.corpus_index()).version
    assert load().corpus.ids == corpus.corpus.ids  # the same ids at the next start
    assert CorpusIndex(corpus.corpus_index()).version == version  # nothing read again


def test_a_line_without_spaces_is_cut_into_bounded_passages(
    tmp_path: Path, llama_index_reader
) -> None:
    (tmp_path / "blob.txt").write_text("A short intro.\n\n" + "x" * 1_000_000 + " tail")
    passages = folders.read_folder(tmp_path, llama_index_reader)
    assert max(len(p.text) for p in passages) <= folders.CHUNK_CHARS
    assert sum(p.text.count("x") for p in passages) == 1_000_000
    assert passages[0].text.startswith("A short intro.") and passages[-1].text.endswith("tail")
    (tmp_path / "blob.txt").unlink()
    (tmp_path / "blob.md").write_text("# " + "T" * 5000 + "\n\nbody")
    assert len(folders.read_folder(tmp_path, llama_index_reader)[0].title) == folders.TITLE_CHARS


def test_corpus_text_loses_terminal_controls(tmp_path: Path, llama_index_reader) -> None:
    (tmp_path / "a.md").write_text("# \x1b[2JTitle\x07\n\nBody \x1b]0;pwned\x07text\x1b[0m.")
    [passage] = folders.read_folder(tmp_path, llama_index_reader)
    assert passage.title == "a › Title" and "\x1b" not in passage.text
    assert passage.text.endswith("Body text.")


@pytest.mark.parametrize(
    "question",
    ["\x00\x00\x00", "\u200b\u200c\u200d\ufeff", " \t\n\x0b\x0c\r ", "\x1b[2J\x1b[H", "\u2060\x07"],
    ids=["nul", "zero-width", "whitespace", "escapes", "joiner-bell"],
)
def test_invisible_questions_are_empty(question: str) -> None:
    with pytest.raises(ChatInputError, match="Type a question first"):
        chatkit.check_question(question, LOCAL)


def test_escape_sequences_and_controls_never_reach_the_model() -> None:
    asked = "\x1b[31mWho\x1b[0m founded\x00 \x1b]8;;http://evil\x07Alpha\u202e Works?\x9b2J"
    assert chatkit.check_question(asked, LOCAL) == "Who founded Alpha Works?"
    assert chatkit.check_question("Wo liegt\u00a0Zelnov?", LOCAL) == "Wo liegt\u00a0Zelnov?"


def test_the_terminal_never_gets_escape_sequences_from_the_model() -> None:
    source = Source("a", "Alpha\x1b[2J", "text", 0.5, {"dense": 0.5})
    retrieval = Retrieval("q", "standalone \x1b]0;title\x07q", (source,), "dense")

    def events():  # a turn whose model output carries escape sequences
        yield retrieval
        yield "Answer \x1b[2J"
        yield "[1]\x1b[31m."
        return chatkit.finish_turn(retrieval, "Answer [1].", TurnAccount())

    out = io.StringIO()
    chatkit.print_turn(TurnStream(events()), write=out.write)
    assert "\x1b" not in out.getvalue() and "Answer [1]." in out.getvalue()
    assert "searched for: standalone q" in out.getvalue()
