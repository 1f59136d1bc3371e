"""Plain-object fakes of the chat tests (imported by name: tests/chatbots is on the path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_openai

from rag_multihop.llm.transport import RawReply, StreamDelta

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "chatbots"


class FakeTransport:
    """A plain-object LLM transport: condense prompts get ``Standalone: <follow-up>``, every
    other request the scripted answer, streamed word by word with usage on the last piece.
    A request whose text holds ``FAIL-MIDSTREAM`` breaks after two pieces."""

    def __init__(self, answer: str = fake_openai.ANSWER) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []

    def check_model(self, model: str) -> None:
        pass

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def supports_response_schema(self, model: str) -> bool:
        return False

    def _text(self, request: dict[str, Any]) -> str:
        self.requests.append(dict(request))
        messages = request["messages"]
        reply = fake_openai.reply_text(messages)
        return self.answer if reply == fake_openai.ANSWER else reply

    def complete(self, request: dict[str, Any], *, api_key: str | None, timeout: float) -> RawReply:
        return RawReply(self._text(request), "stop", None, "fake", 40, 9, 0.0)

    async def acomplete(
        self, request: dict[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        return self.complete(request, api_key=api_key, timeout=timeout)

    def stream(
        self, request: dict[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        text = self._text(request)
        fail = fake_openai.FAIL in str(request["messages"][-1])
        words = text.split(" ")
        for i, word in enumerate(words):
            if fail and i == 2:
                raise ConnectionError("the server closed the stream")
            yield StreamDelta((" " if i else "") + word, model="fake")
        yield StreamDelta("", "stop", "fake", 40, 9)

    async def astream(self, request: dict[str, Any], *, api_key: str | None, timeout: float) -> Any:
        for delta in self.stream(request, api_key=api_key, timeout=timeout):
            yield delta
