"""Fixtures of the Haystack integration's tests: offline environment (set before any library
import) and the fakes of ``hs_fakes`` (importable: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from rag_multihop.testing import HashingEncoder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 and a
    free port, started for the test session and stopped after it; yields ``(host, port)``."""
    chromadb = pytest.importorskip("chromadb")
    import shutil
    import socket
    import subprocess
    import time

    chroma = shutil.which("chroma")
    if chroma is None:
        pytest.skip("the chroma command (from the chromadb package) is not on PATH")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tmp_path_factory.mktemp("chroma")
    log = open(folder / "server.log", "wb")  # noqa: SIM115 - closed after the server stops
    server = subprocess.Popen(
        [chroma, "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"chroma server did not start: {(folder / 'server.log').read_text()}"
                    ) from None
                time.sleep(0.2)
        yield "127.0.0.1", port
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
