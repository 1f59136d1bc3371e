"""Shared test setup: offline environment variables (set before any library import) and fixtures."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(
    os.environ.get("RAG_MULTIHOP_DATA") or REPO_ROOT.parent / "shared" / "datasets"
)


class HashingEncoder:
    """A deterministic bag-of-words encoder for tests: no model, no network.

    Each lowercase word is hashed into one of ``dim`` buckets; vectors are L2-normalised.
    """

    def __init__(self, dim: int = 64, name: str = "hashing-test") -> None:
        self._dim, self._name = dim, name
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                word = word.strip(".,?!;:'\"()")
                if word:
                    out[row, sum(map(ord, word)) * 2654435761 % self._dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


CASSETTES = REPO_ROOT / "tests" / "cassettes"
"""Every recorded and hand-written cassette, one folder per test module (see its README)."""

AUTH_HEADERS = ["authorization", "x-api-key", "api-key", "openai-organization", "cookie"]
RESPONSE_HEADERS_TO_DROP = ("set-cookie", "openai-organization", "openai-project")


def _scrub_response(response: dict) -> dict:
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in RESPONSE_HEADERS_TO_DROP:
            del headers[name]
    return response


@pytest.fixture(scope="module")
def vcr_config() -> dict[str, object]:
    """vcrpy settings shared by every cassette test: auth headers stripped on record,
    provider cookies and organisation headers dropped from responses. Modules that script
    failures override it with ``{**vcr_config, "record_mode": "none"}``."""
    return {
        "filter_headers": AUTH_HEADERS,
        "before_record_response": _scrub_response,
        "decode_compressed_response": True,
    }


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    """``tests/cassettes/<test module name>/`` wherever the module sits under ``tests/``."""
    return str(CASSETTES / request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="session")
def minilm():
    """The bundled MiniLM encoder (loads in a few seconds, no network)."""
    from rag_multihop.encoders import default_encoder

    return default_encoder()


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


POLISH_WEDDING_QUESTION = "Where was the director of the film Polish Wedding born?"


def polish_wedding_passages() -> list:
    """A toy two-hop corpus: the question's bridge, its answer passage and distractors."""
    from rag_multihop import Passage

    return [
        Passage(
            "polish-wedding",
            "Polish Wedding is a 1998 film written and directed by Theresa Connelly.",
            title="Polish Wedding",
        ),
        Passage(
            "theresa-connelly",
            "Theresa Connelly is an American screenwriter born in Philadelphia.",
            title="Theresa Connelly",
        ),
        Passage("philadelphia", "Philadelphia is a city in Pennsylvania.", title="Philadelphia"),
        Passage("claire-danes", "Claire Danes is an American actress.", title="Claire Danes"),
        Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", title="Rope"),
    ]


@pytest.fixture
def polish_wedding() -> list:
    """:func:`polish_wedding_passages` as a fixture."""
    return polish_wedding_passages()
