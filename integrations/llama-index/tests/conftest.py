"""Fixtures of the LlamaIndex integration's tests: offline environment (set before any library
import), the fakes of ``li_fakes`` (importable: pytest puts this folder on ``sys.path``) and
the bundled MiniLM."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
from li_fakes import HashingEmbedding

from rag_multihop import testing
from rag_multihop.testing import HashingEncoder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hashing_embedding() -> HashingEmbedding:
    return HashingEmbedding(model_name="hashing-test")


@pytest.fixture
def settings_embed_model():
    """``Settings.embed_model`` set to the hashing embed model for one test."""
    from llama_index.core import Settings

    before = Settings._embed_model
    Settings.embed_model = HashingEmbedding()
    yield Settings.embed_model
    Settings._embed_model = before


class LazyDefaultRecorder:
    """Stands in for LlamaIndex's ``resolve_embed_model``: records every call and returns an
    embed model named ``lazy-default`` (where the real one would build ``OpenAIEmbedding``)."""

    def __init__(self) -> None:
        self.calls: list[object] = []

    def __call__(self, embed_model: object = None, callback_manager: object = None):
        self.calls.append(embed_model)
        return HashingEmbedding(model_name="lazy-default")


@pytest.fixture
def unset_settings_embed_model(monkeypatch):
    """``Settings.embed_model`` never set, its lazy default resolver recorded (never run)."""
    from llama_index.core import Settings
    from llama_index.core import settings as settings_module

    recorder = LazyDefaultRecorder()
    monkeypatch.setattr(settings_module, "resolve_embed_model", recorder)
    monkeypatch.setattr(Settings, "_embed_model", None)
    yield recorder
    assert Settings._embed_model is None, "a component set Settings.embed_model"


@pytest.fixture(scope="session")
def minilm_embedding():
    """The bundled MiniLM as a LlamaIndex embed model (loads in a few seconds, no network)."""
    from llama_index.embeddings.rag_multihop import RagMultihopEmbedding

    return RagMultihopEmbedding()


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server on 127.0.0.1 for the test session (see
    :func:`rag_multihop.testing.chroma_server`); yields ``(host, port)``."""
    import shutil

    pytest.importorskip("chromadb")
    if shutil.which("chroma") is None:
        pytest.skip("the chroma command (from the chromadb package) is not on PATH")
    with testing.chroma_server(tmp_path_factory.mktemp("chroma")) as address:
        yield address
