"""Shared test setup: offline environment variables (set before any library import) and fixtures."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest

from rag_multihop.testing import HashingEncoder, polish_wedding_passages

REPO_ROOT = Path(__file__).resolve().parents[1]


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
    """The named datasets' folder by the CLI's rule (:func:`rag_multihop.paths.data_dir`:
    ``$RAG_MULTIHOP_DATA``, else ``../shared/datasets`` next to the working directory); the
    test is skipped, saying so, when there is none."""
    from rag_multihop.paths import DATA_ENV, data_dir

    try:
        folder = data_dir()
    except ValueError:
        pytest.skip(f"no shared datasets: set ${DATA_ENV} to the folder that holds them")
    if not folder.is_dir():
        pytest.skip(f"${DATA_ENV} names {folder}, which is not a folder")
    return folder


@pytest.fixture
def polish_wedding() -> list:
    """:func:`rag_multihop.testing.polish_wedding_passages` as a fixture."""
    return polish_wedding_passages()
