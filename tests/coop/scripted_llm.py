"""A scripted OpenAI-compatible chat server on 127.0.0.1 for CoopRAG's tests (no model): a
:class:`rag_multihop.testing.FakeOpenAIServer` answering by the kind of CoopRAG prompt a
request carries (unrolling, completion, answer, key extraction, repair; see
:data:`rag_multihop.testing.PROMPT_MARKERS`), with fixed usage (``PROMPT_TOKENS``,
``COMPLETION_TOKENS``). It records the request bodies. It serves the recording of the
scripted cassettes (see tests/cassettes/README.md).
"""

from __future__ import annotations

from typing import Any

from rag_multihop.testing import FakeOpenAIServer, FakeTransport, polish_wedding_replies

PROMPT_TOKENS, COMPLETION_TOKENS = 150, 30

ANSWER = '{"answer": "Philadelphia"}'
REPAIR = "still no JSON here"


def start(**replies: str) -> tuple[FakeOpenAIServer, str]:
    """Start the server on a free port with ``replies`` (by prompt kind: ``answer`` or one of
    :data:`~rag_multihop.testing.PROMPT_MARKERS`) over the toy corpus's defaults;
    returns it and its ``/v1`` base URL. Stop it with ``server.shutdown()``."""
    answer = replies.pop("answer", ANSWER)
    fake = FakeTransport(polish_wedding_replies(**{"repair": REPAIR, **replies}), default=answer)

    def reply(messages: list[dict[str, Any]]) -> str:
        return fake.complete({"messages": messages}, api_key=None, timeout=0.0).text or ""

    server = FakeOpenAIServer(
        reply, prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS
    )
    return server, server.start()
