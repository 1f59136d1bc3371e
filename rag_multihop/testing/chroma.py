"""A real Chroma server for the adapters' vector-store tests (needs ``chromadb``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def chroma_server(folder: str | Path, *, timeout: float = 60.0) -> Iterator[tuple[str, int]]:
    """A Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 and a free
    port, its data and log in ``folder``; yields ``(host, port)`` once it answers, and stops
    it on exit.

    Raises:
        ImportError: chromadb is not installed.
        FileNotFoundError: the ``chroma`` command is not on PATH.
        RuntimeError: the server did not answer within ``timeout`` seconds (its log is quoted).
    """
    import chromadb

    chroma = shutil.which("chroma")
    if chroma is None:
        raise FileNotFoundError("the chroma command (from the chromadb package) is not on PATH")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = Path(folder)
    log_path = folder / "server.log"
    command = [chroma, "run", "--path", str(folder / "data"), "--host", "127.0.0.1"]
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                    break
                except Exception:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"chroma server did not start: {log_path.read_text()}"
                        ) from None
                    time.sleep(0.2)
            yield "127.0.0.1", port
        finally:
            server.terminate()
            server.wait(timeout=30)
