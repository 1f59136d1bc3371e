"""The ten-turn demo conversation through both terminal chats, as the bundled model runs
it (follow-ups condensed without a model): every turn cites the right demo passages, and a
new question never gets the previous turn's evidence. Each chat runs it with rag-multihop's own
client and with the framework's own LLM object (a LlamaIndex ``LLM``, a Haystack chat
generator) wrapped by the adapters."""

from __future__ import annotations

from typing import Any

import chatkit
import pytest
from chat_fakes import FakeTransport
from demo_conversation import NEW_QUESTIONS, TURNS
from haystack import component
from haystack.dataclasses import ChatMessage
from haystack_chat import HaystackChat, HaystackStack
from llama_index.core.llms import MockLLM
from llama_index.llms.rag_multihop import as_llm_client
from llama_index_chat import LlamaIndexChat, LlamaIndexStack
from llm_objects import haystack_generator

from rag_multihop.llm import LLMClient, LLMSettings

SETTINGS = LLMSettings("openai/fake", api_base="http://127.0.0.1:9/v1", max_retries=0)


@component
class Silent:
    """A generator that answers "-" (the model is beside the point here)."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], streaming_callback: Any = None) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant("-")]}


def llama_index(corpus: chatkit.ChatCorpus) -> Any:
    client = LLMClient(SETTINGS, transport=FakeTransport())
    return LlamaIndexChat(LlamaIndexStack(corpus), SETTINGS, client=client, small_model=True)


def haystack(corpus: chatkit.ChatCorpus) -> Any:
    return HaystackChat(
        HaystackStack(corpus), SETTINGS, generator_factory=lambda s: Silent(), small_model=True
    )


def llama_index_llm_object(corpus: chatkit.ChatCorpus) -> Any:
    """The app's LlamaIndex ``LLM`` (LlamaIndex's ``MockLLM``) behind the chat's client."""
    client = as_llm_client(MockLLM(max_tokens=8))
    return LlamaIndexChat(LlamaIndexStack(corpus), SETTINGS, client=client, small_model=True)


def haystack_generator_object(corpus: chatkit.ChatCorpus) -> Any:
    """The app's Haystack chat generator, wrapped as the chat's ``--llm-object`` does."""
    return HaystackChat(
        HaystackStack(corpus),
        SETTINGS,
        generator_factory=lambda s: haystack_generator(Silent(), s),
        small_model=True,
    )


@pytest.mark.parametrize(
    "make",
    [llama_index, haystack, llama_index_llm_object, haystack_generator_object],
    ids=["llama-index", "haystack", "llama-index-llm-object", "haystack-generator-object"],
)
def test_ten_turns_cite_the_right_passages(demo_corpus: chatkit.ChatCorpus, make: Any) -> None:
    chat = make(demo_corpus)
    assert chat.method == "multihop" and not chat.conversation.llm_condense
    previous: set[str] = set()
    for turn, (question, gold) in enumerate(TURNS):
        result = chat.stream(question).run()
        cited = {e.source.id for e in result.evidence if e.cited}
        assert gold <= cited, (turn, question, result.retrieval.standalone, result.answer)
        if turn in NEW_QUESTIONS:
            assert result.retrieval.standalone == question
            assert not cited & previous, (turn, question)
        else:
            assert result.retrieval.standalone != question  # the earlier subject carried in
        assert result.account.condense.calls == 0
        assert result.error is None  # the model (or the object) was called without a failure
        previous = cited
