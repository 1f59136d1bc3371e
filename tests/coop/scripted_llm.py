"""A scripted OpenAI-compatible chat server on 127.0.0.1 for CoopRAG's tests (no model).

Each request is answered by the kind of CoopRAG prompt it carries (unrolling, completion,
answer, key extraction, repair), from a dictionary the test can change; usage is fixed
(``PROMPT_TOKENS``, ``COMPLETION_TOKENS``). It records the request bodies. It serves the
benchmark tests (the ``coop`` methods build a real litellm client from ``--llm``) and the
recording of the scripted cassettes (see tests/cassettes/README.md).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS, COMPLETION_TOKENS = 150, 30

UNROLLING = json.dumps(
    {
        "sub_questions": ["Who directed Polish Wedding?", "Where was that director born?"],
        "chain": [
            {"head": "Polish Wedding", "relation": "directed by", "tail": "<unknown>"},
            {"head": "<unknown>", "relation": "born in", "tail": "<answer>"},
        ],
    }
)
COMPLETION = json.dumps(
    {
        "chain": [
            {"head": "Polish Wedding", "relation": "directed by", "tail": "Theresa Connelly"},
            {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
        ]
    }
)
DEFAULT_REPLIES = {
    "unroll": UNROLLING,
    "complete": COMPLETION,
    "answer": '{"answer": "Philadelphia"}',
    "key": '{"answerable": true, "key_sentence": ""}',
    "repair": "still no JSON here",
}


def prompt_kind(messages: list[dict[str, Any]]) -> str:
    prompt = str(messages[-1].get("content") or "") if messages else ""
    if "could not be used" in prompt:
        return "repair"
    if "Plan how to answer" in prompt:
        return "unroll"
    if "Complete the reasoning chain" in prompt:
        return "complete"
    if "Can the question be answered" in prompt:
        return "key"
    return "answer"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        server: Any = self.server
        server.requests.append(request)
        text = server.replies[prompt_kind(request.get("messages", []))]
        body = json.dumps(
            {
                "id": f"chatcmpl-scripted-{len(server.requests)}",
                "object": "chat.completion",
                "created": 1763805600,
                "model": request.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": PROMPT_TOKENS,
                    "completion_tokens": COMPLETION_TOKENS,
                    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start(**replies: str) -> tuple[ThreadingHTTPServer, str]:
    """Start the server on a free port with ``replies`` over the defaults; returns it and
    its ``/v1`` base URL. Stop it with ``server.shutdown()``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = []  # type: ignore[attr-defined]
    server.replies = {**DEFAULT_REPLIES, **replies}  # type: ignore[attr-defined]
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
