"""``RagMultihopChatGenerator``: replies through the core client, sync and async, streamed,
accounted in the reply's meta, serialised without a key; a plain-object transport stands in
for the provider (``rag_multihop.testing.FakeTransport`` replaces the client's default
transport, nothing else)."""

from __future__ import annotations

import pytest
from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.utils import Secret
from haystack_integrations.components.generators.rag_multihop import RagMultihopChatGenerator

from rag_multihop.testing import FakeTransport

ANSWER = "Theresa Connelly was born in Philadelphia [2]."


@pytest.fixture
def transport(monkeypatch: pytest.MonkeyPatch) -> FakeTransport:
    fake = FakeTransport(default=ANSWER, prompt_tokens=30, completion_tokens=8)
    monkeypatch.setattr("rag_multihop.llm.client.default_transport", lambda model: fake)
    return fake


MESSAGES = [ChatMessage.from_system("Cite passages."), ChatMessage.from_user("Where?")]


def test_reply_meta_and_request(transport) -> None:
    generator = RagMultihopChatGenerator(llm="openai/fake", max_tokens=64, timeout=20)
    reply = generator.run(MESSAGES)["replies"][0]
    assert reply.text == ANSWER
    assert reply.meta["usage"] == {"prompt_tokens": 30, "completion_tokens": 8}
    assert reply.meta["model"] == "openai/fake" and reply.meta["finish_reason"] == "stop"
    request = transport.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "Cite passages."}
    assert request["max_tokens"] == 64 and generator.settings.timeout == 20


def test_streaming_in_a_pipeline(transport) -> None:
    chunks: list[StreamingChunk] = []
    pipeline = Pipeline()
    pipeline.add_component("prompt", ChatPromptBuilder([ChatMessage.from_user("{{ q }}")]))
    pipeline.add_component("llm", RagMultihopChatGenerator(llm="openai/fake"))
    pipeline.connect("prompt.prompt", "llm.messages")
    out = pipeline.run({"prompt": {"q": "Where?"}, "llm": {"streaming_callback": chunks.append}})
    assert "".join(c.content for c in chunks) == ANSWER == out["llm"]["replies"][0].text
    assert len(chunks) == len(ANSWER.split(" "))
    assert out["llm"]["replies"][0].meta["usage"]["completion_tokens"] == 8


@pytest.mark.anyio
async def test_async_with_an_async_callback(transport) -> None:
    generator = RagMultihopChatGenerator(llm="openai/fake")
    pieces: list[str] = []

    async def collect(chunk: StreamingChunk) -> None:
        pieces.append(chunk.content)

    streamed = await generator.run_async(MESSAGES, streaming_callback=collect)
    plain = await generator.run_async(MESSAGES)
    assert "".join(pieces) == ANSWER == streamed["replies"][0].text == plain["replies"][0].text
    with pytest.raises(TypeError, match="run_async"):
        generator.run(MESSAGES, streaming_callback=collect)


def test_round_trip_keeps_the_key_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-secret-value")
    generator = RagMultihopChatGenerator(
        llm="openai/gpt-4o-mini",
        api_key=Secret.from_env_var("MY_LLM_KEY", strict=False),
        max_tokens=128,
        temperature=0.3,
        timeout=30,
        max_retries=1,
    )
    data = generator.to_dict()
    assert "sk-secret-value" not in str(data)
    again = RagMultihopChatGenerator.from_dict(data)
    assert again.to_dict() == data and again.settings == generator.settings
    assert again.settings.api_key_env == "MY_LLM_KEY"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="llm must be a non-empty litellm model string"):
        RagMultihopChatGenerator(llm="")
    pasted = "sk-proj-" + "x" * 40
    with pytest.raises(ValueError, match="llm looks like an API key") as refused:
        RagMultihopChatGenerator(llm=pasted)
    assert pasted not in str(refused.value)
    with pytest.raises(ValueError, match="api_key must be Secret.from_env_var"):
        RagMultihopChatGenerator(llm="openai/x", api_key=Secret.from_token("sk-pasted"))
    with pytest.raises(ValueError, match="timeout"):
        RagMultihopChatGenerator(llm="openai/x", timeout=0)
