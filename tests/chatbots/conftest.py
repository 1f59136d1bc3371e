"""Fixtures of the example-chatbot tests: the examples folder on the import path, the demo
corpus embedded once with the bundled MiniLM, plain-object fake LLMs and the scripted
OpenAI-compatible server."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "chatbots"))

import chatkit
import fake_openai
from chat_fakes import FakeTransport


@pytest.fixture(scope="session")
def demo_corpus(minilm: Any, tmp_path_factory: pytest.TempPathFactory) -> chatkit.ChatCorpus:
    """The demo corpus with MiniLM vectors, cached in a folder of this test session."""
    return chatkit.load_chat_corpus(
        encoder=minilm, cache=tmp_path_factory.mktemp("chat-cache"), show_progress=False
    )


@pytest.fixture(scope="session")
def llama_index_reader() -> Any:
    from llama_index_chat import LlamaIndexFolderReader

    return LlamaIndexFolderReader()


@pytest.fixture(scope="session")
def haystack_reader() -> Any:
    from haystack_chat import HaystackFolderReader

    return HaystackFolderReader()


@pytest.fixture(params=["llama-index", "haystack"])
def folder_reader(request: pytest.FixtureRequest) -> Any:
    """Each chat's framework reader in turn."""
    name = "llama_index_reader" if request.param == "llama-index" else "haystack_reader"
    return request.getfixturevalue(name)


@pytest.fixture
def fake_transport() -> FakeTransport:
    return FakeTransport()


@pytest.fixture
def fake_server() -> Iterator[tuple[Any, str]]:
    server, url = fake_openai.start()
    yield server, url
    server.shutdown()


@pytest.fixture
def index_builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths of the corpus indexes built during the test; each build is 0.3 s slower,
    so that sessions starting together overlap."""
    from rag_multihop.store import CorpusIndex

    build = CorpusIndex.build.__func__  # type: ignore[attr-defined]
    builds: list[Path] = []

    def slow_build(cls: type[CorpusIndex], path: Path, *args: Any, **kwargs: Any) -> Any:
        builds.append(path)
        time.sleep(0.3)
        return build(cls, path, *args, **kwargs)

    monkeypatch.setattr(CorpusIndex, "build", classmethod(slow_build))
    return builds
