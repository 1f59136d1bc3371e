"""Start ``examples/chatbots/web_chat.py`` as a user would, for the browser tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import fake_openai
import pytest
from chat_fakes import EXAMPLES

START_SECONDS = 240


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_web_chat(folder: Path, *flags: str, scripted: bool = True) -> Iterator[str]:
    """Run the web chat (log and cache in ``folder``) with ``flags``, answering through the
    scripted server of ``fake_openai`` (``scripted=False``: the chat's default model, the
    bundled local one); yields its URL once it answers, stops it afterwards."""
    server, api_base = fake_openai.start() if scripted else (None, "")
    port = free_port()
    log = folder / "web_chat.log"
    env = {**os.environ, "RAG_MULTIHOP_CACHE": str(folder / "cache")}
    env.pop("RAG_MULTIHOP_CHAT_LLM", None)
    model = ["--llm", "openai/fake", "--api-base", api_base] if scripted else []
    command = [sys.executable, "web_chat.py", *model, "--port", str(port), *flags]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=EXAMPLES, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"web chat did not start:\n{log.read_text()[-3000:]}")
            time.sleep(1)
    yield url
    process.terminate()
    process.wait(timeout=30)
    if server is not None:
        server.shutdown()
