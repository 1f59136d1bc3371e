"""Fixtures of the Haystack integration's tests: offline environment (set before any library
import) and the fakes of ``hs_fakes`` (importable: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
from hs_fakes import HashingEncoder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()
