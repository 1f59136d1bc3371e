"""The web chat's background indexing: the page's corpus line while a folder is indexed,
its outcome, and the switch of new conversations to the folder (no browser: the line and the
sessions are read from the app object; the e2e test drives the page)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import chatkit
import pytest
from chatkit import ChatCorpus, ChatInputError
from folder_files import write_folder
from folders import IndexProgress

web_chat = pytest.importorskip("web_chat", reason="needs examples/chatbots/requirements.txt")


class Named:
    """A stand-in chat: the web app only stores it per session here."""

    def __init__(self, corpus: str) -> None:
        self.corpus = corpus


def test_progress_then_switch_to_the_indexed_folder(
    tmp_path: Path, llama_index_reader, hashing_encoder
) -> None:
    docs = write_folder(tmp_path / "docs")
    release = threading.Event()

    def load(report: Any) -> ChatCorpus:
        report(IndexProgress("embedding", 64, 256, 2.0))
        release.wait(30)
        return chatkit.load_chat_corpus(
            docs, reader=llama_index_reader, encoder=hashing_encoder, cache=tmp_path / "c"
        )

    app = web_chat.WebChat(lambda: Named("demo"), "demo", "a model")
    app.indexing = web_chat.FolderIndexing(
        str(docs), load, lambda c: app.switch(lambda: Named(c.name), c.name)
    )
    assert "Indexing" in app.indexing.status() and "listing files" in app.indexing.status()
    app.indexing.start()
    first = app.session("tab").chat
    for _ in range(200):
        if app.indexing.progress is not None:
            break
        threading.Event().wait(0.05)
    line = app.indexing.status()
    assert "embedding 64/256 passages · 32.0 passages/s · ETA 6 s" in line
    assert "answers come from the demo corpus" in line
    assert app.session("tab").chat is first and first.corpus == "demo"
    _, _, timer = app.corpus_status()
    assert timer.active is True

    release.set()
    assert app.indexing.finished.wait(60)
    assert app.indexing.status().startswith("**Corpus:** docs (8 passages) · indexed")
    header, _, timer = app.corpus_status()
    assert timer.active is False and "docs" in header
    assert app.session("tab").chat.corpus == "docs"  # the tab's next question uses the folder


def test_a_folder_that_cannot_be_indexed_is_said_and_the_demo_stays(tmp_path: Path) -> None:
    def load(report: Any) -> ChatCorpus:
        raise ChatInputError(f"no readable text in {str(tmp_path)!r} (the folder is empty)")

    app = web_chat.WebChat(lambda: Named("demo"), "demo", "a model")
    app.indexing = web_chat.FolderIndexing(str(tmp_path), load, lambda c: None).start()
    assert app.indexing.finished.wait(30)
    line = app.indexing.status()
    assert line.startswith(f"⚠️ **Could not index {tmp_path}:** no readable text")
    assert "Answers still come from the demo corpus" in line
    assert app.session("tab").chat.corpus == "demo"
