"""A stand-in for llama.cpp's ``llama-server``, for lifecycle tests without the real binary.

It takes the flags ``LocalServer`` passes (``--port``, ``--alias``, ...), requires the key of
``LLAMA_API_KEY`` on every path but ``/health`` (401 otherwise), binds with ``SO_REUSEPORT``
as cpp-httplib does, answers ``/props`` and ``/v1/chat/completions`` (a fixed reply), writes
its pid to ``$FAKE_LLAMA_PIDFILE`` and exits 1 when the port cannot be bound. Standard library
only: the tests write it out with a ``#!`` line naming this interpreter.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _flag(argv: list[str], name: str, default: str = "") -> str:
    return argv[argv.index(name) + 1] if name in argv else default


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        if hasattr(socket, "SO_REUSEPORT"):
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


def main(argv: list[str]) -> int:
    port, alias = int(_flag(argv, "--port")), _flag(argv, "--alias", "fake")
    key = os.environ.get("LLAMA_API_KEY", "")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _authorised(self) -> bool:
            if self.path == "/health" or not key:
                return True
            if self.headers.get("Authorization", "") == f"Bearer {key}":
                return True
            self._send(401, {"error": {"message": "Invalid API Key", "code": 401}})
            return False

        def do_GET(self) -> None:
            if not self._authorised():
                return
            if self.path == "/health":
                self._send(200, {"status": "ok"})
            elif self.path == "/props":
                self._send(200, {"model_alias": alias})
            else:
                self._send(404, {"error": {"message": "not found", "code": 404}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if not self._authorised():
                return
            message = {"role": "assistant", "content": "fake reply"}
            self._send(
                200,
                {
                    "id": "fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": alias,
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                },
            )

    try:
        server = _Server(("127.0.0.1", port), Handler)
    except OSError as exc:
        print(f"fake llama-server: couldn't bind port {port}: {exc}", flush=True)
        return 1
    pidfile = os.environ.get("FAKE_LLAMA_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(str(os.getpid()))
    print(f"fake llama-server listening on {port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
