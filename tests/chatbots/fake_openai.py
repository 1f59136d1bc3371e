"""The scripted OpenAI-compatible chat server of the chat tests (no model), a
:class:`rag_multihop.testing.FakeOpenAIServer`:

- A condense request (its prompt holds "Standalone question:") is answered with
  ``STANDALONE`` + the follow-up, so tests can see the rewritten question used for retrieval.
- Any other request is answered "The answer is in [1] and [2]." (streamed word by word when
  asked to stream, with a final usage chunk as OpenAI sends it).
- A question containing ``FAIL-MIDSTREAM`` gets two pieces, then the connection drops in the
  middle of the chunked body (the client sees a broken stream).
- A question containing ``SLOW-ANSWER`` gets its pieces 0.6 s apart (an answer still
  streaming when the next question is sent).

Run it alone (for a manual web chat session): ``python tests/chatbots/fake_openai.py``.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from rag_multihop.testing import FakeOpenAIServer

ANSWER = "The answer is in [1] and [2]."
STANDALONE = "Standalone:"
FAIL = "FAIL-MIDSTREAM"
SLOW = "SLOW-ANSWER"
PROMPT_TOKENS, COMPLETION_TOKENS = 40, 9


def reply_text(messages: list[dict[str, Any]]) -> str:
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    if "Standalone question:" in prompt:
        follow_up = re.search(r"Follow-up question: (.*)", prompt)
        return f"{STANDALONE} {follow_up.group(1).strip() if follow_up else ''}"
    return ANSWER


def start() -> tuple[FakeOpenAIServer, str]:
    """Start the server on a free port; returns it and its ``/v1`` base URL."""
    server = FakeOpenAIServer(
        reply_text,
        prompt_tokens=PROMPT_TOKENS,
        completion_tokens=COMPLETION_TOKENS,
        break_on=FAIL,
        slow_on=SLOW,
        piece_seconds=0.6,
    )
    return server, server.start()


if __name__ == "__main__":
    srv, url = start()
    print(f"api_base={url}", flush=True)
    threading.Event().wait()
