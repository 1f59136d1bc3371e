"""Fixtures of the Haystack integration's tests: offline environment (set before any library
import), the shared helpers of :mod:`rag_multihop.testing` and the Haystack fakes of
``hs_fakes`` (importable: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from rag_multihop import testing
from rag_multihop.testing import HashingEncoder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
