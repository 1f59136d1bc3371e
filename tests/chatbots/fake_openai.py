"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the chat tests (no model).

- A condense request (its prompt holds "Standalone question:") is answered with
  ``STANDALONE`` + the follow-up, so tests can see the rewritten question used for retrieval.
- Any other request is answered "The answer is in [1] and [2]." (streamed word by word when
  asked to stream, with a final usage chunk as OpenAI sends it).
- A question containing ``FAIL-MIDSTREAM`` gets two pieces, then the connection drops in the
  middle of the chunked body (the client sees a broken stream).

Run it alone (for a manual web chat session): ``python tests/chatbots/fake_openai.py``.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "The answer is in [1] and [2]."
STANDALONE = "Standalone:"
FAIL = "FAIL-MIDSTREAM"
PROMPT_TOKENS, COMPLETION_TOKENS = 40, 9


def reply_text(messages: list[dict[str, Any]]) -> str:
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    if "Standalone question:" in prompt:
        follow_up = re.search(r"Follow-up question: (.*)", prompt)
        return f"{STANDALONE} {follow_up.group(1).strip() if follow_up else ''}"
    return ANSWER


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        messages = request.get("messages", [])
        text = reply_text(messages)
        self.server.requests.append(request)  # type: ignore[attr-defined]
        base = {"id": "chatcmpl-fake", "created": 1700000000, "model": request.get("model", "")}
        usage = {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        }
        if not request.get("stream"):
            body = json.dumps(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        fail = bool(messages) and FAIL in json.dumps(messages[-1])
        for i, word in enumerate(text.split(" ")):
            if fail and i == 2:
                self.wfile.write(b'FFFF\r\ndata: {"trunc')  # a chunk that never ends
                self.wfile.flush()
                self.close_connection = True
                return
            chunk = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": (" " if i else "") + word},
                        "finish_reason": None,
                    }
                ],
            }
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        last = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
        done = {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
        self._chunk(f"data: {json.dumps(done)}\n\n".encode())
        self._chunk(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
        self._chunk(b"")


def start() -> tuple[ThreadingHTTPServer, str]:
    """Start the server on a free port; returns it and its ``/v1`` base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = []  # type: ignore[attr-defined]
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    srv, url = start()
    print(f"api_base={url}", flush=True)
    threading.Event().wait()
