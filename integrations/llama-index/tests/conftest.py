"""Fixtures of the LlamaIndex integration's tests: offline environment (set before any library
import), the fakes of ``li_fakes`` (importable: pytest puts this folder on ``sys.path``) and
the bundled MiniLM."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
from li_fakes import HashingEmbedding, HashingEncoder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hashing_embedding() -> HashingEmbedding:
    return HashingEmbedding(model_name="hashing-test")


@pytest.fixture(scope="session")
def minilm_embedding():
    """The bundled MiniLM as a LlamaIndex embed model (loads in a few seconds, no network)."""
    from llama_index.embeddings.rag_multihop import RagMultihopEmbedding

    return RagMultihopEmbedding()


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()
