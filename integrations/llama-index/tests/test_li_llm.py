"""``RagMultihopLLM``: every call goes through the core client, sync, async and streamed, and
is accounted; a plain-object transport stands in for the provider."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.llms.rag_multihop import RagMultihopLLM

from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.testing import FakeTransport

ANSWER = "Theresa Connelly was born in Philadelphia [2]."


@pytest.fixture
def transport() -> FakeTransport:
    return FakeTransport(default=ANSWER, prompt_tokens=30, completion_tokens=8)


@pytest.fixture
def llm(transport: FakeTransport) -> RagMultihopLLM:
    return RagMultihopLLM(LLMClient(LLMSettings("openai/fake", max_tokens=64), transport=transport))


MESSAGES = [
    ChatMessage(role="system", content="Cite passages."),
    ChatMessage(role="user", content="Where was she born?"),
]


def test_sync_calls_reach_the_client_and_are_accounted(llm, transport) -> None:
    assert llm.complete("Where?").text == ANSWER
    assert llm.chat(MESSAGES).message.content == ANSWER
    pieces = [r.delta for r in llm.stream_chat(MESSAGES)]
    assert "".join(pieces) == ANSWER and len(pieces) == len(ANSWER.split(" "))
    assert [kind for kind, _ in llm.calls] == ["complete", "chat", "chat"]
    assert all(account.total_tokens == 38 for _, account in llm.calls)
    assert llm.client.total.calls == 3
    assert transport.requests[1]["messages"] == [
        {"role": "system", "content": "Cite passages."},
        {"role": "user", "content": "Where was she born?"},
    ]
    assert llm.metadata.num_output == 64 and llm.metadata.is_chat_model


@pytest.mark.anyio
async def test_async_calls_and_streams(llm) -> None:
    assert (await llm.acomplete("Where?")).text == ANSWER
    assert (await llm.achat(MESSAGES)).message.content == ANSWER
    chat = [r.delta async for r in await llm.astream_chat(MESSAGES)]
    completion = [r.text async for r in await llm.astream_complete("Where?")]
    assert "".join(chat) == ANSWER and completion[-1] == ANSWER
    assert [kind for kind, _ in llm.calls] == ["complete", "chat", "chat", "complete"]
    assert llm.calls[-1][1].completion_tokens == 8


def test_context_window_defaults_and_bad_input() -> None:
    assert RagMultihopLLM("local").metadata.context_window == 2048
    assert RagMultihopLLM("openai/gpt-4o-mini", context_window=4096).context_window == 4096
    with pytest.raises(TypeError, match="llm must be a litellm model string.*got int"):
        RagMultihopLLM(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="context_window"):
        RagMultihopLLM("openai/gpt-4o-mini", context_window=0)
    pasted = "sk-proj-" + "x" * 40
    with pytest.raises(ValueError, match="llm looks like an API key") as refused:
        RagMultihopLLM(pasted)
    assert pasted not in str(refused.value)
