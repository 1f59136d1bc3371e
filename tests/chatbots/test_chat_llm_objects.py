"""The terminal chats' ``--llm-object``: a LlamaIndex ``LLM`` object of the app's own and
Haystack's ``OpenAIChatGenerator`` answer through rag-multihop's client (condensing, citations,
the account from the server's usage), against the scripted OpenAI-compatible server."""

import chatkit
import fake_openai
import haystack_chat
import llama_index_chat
import llm_objects
import pytest

from rag_multihop.llm import LLMSettings

QUESTION = "Where was the founder of Veldmark Ropeworks born?"


@pytest.fixture(scope="module")
def li_stack(demo_corpus: chatkit.ChatCorpus) -> llama_index_chat.LlamaIndexStack:
    return llama_index_chat.LlamaIndexStack(demo_corpus)


@pytest.fixture(scope="module")
def hs_stack(demo_corpus: chatkit.ChatCorpus) -> haystack_chat.HaystackStack:
    return haystack_chat.HaystackStack(demo_corpus)


def test_the_llama_index_chat_answers_through_an_llm_object(li_stack, fake_server) -> None:
    server, url = fake_server
    settings = LLMSettings("openai/fake", api_base=url, max_retries=0)
    client = llm_objects.llama_index_client(settings)
    assert client.settings.model == "llama_index/OpenAICompatibleLLM/fake"
    chat = llama_index_chat.LlamaIndexChat(li_stack, settings, "dense", client=client)
    first = chat.stream(QUESTION).run()
    assert first.generated == fake_openai.ANSWER and any(e.cited for e in first.evidence)
    assert first.account.answer.prompt_tokens == fake_openai.PROMPT_TOKENS  # the server's usage
    assert not first.account.answer.estimated and "stream" not in server.requests[-1]
    second = chat.stream("When did she die?").run()
    assert second.retrieval.how == "model rewrite"  # the scripted rewrite, checked and used
    assert second.account.condense.calls == 1


def test_the_haystack_chat_answers_through_a_generator_object(hs_stack, fake_server) -> None:
    server, url = fake_server
    settings = LLMSettings("openai/fake", api_base=url, max_retries=0)

    def factory(s: LLMSettings):
        return llm_objects.haystack_generator(haystack_chat.chat_generator(s), s)

    chat = haystack_chat.HaystackChat(hs_stack, settings, "dense", generator_factory=factory)
    first = chat.stream(QUESTION).run()
    assert first.generated == fake_openai.ANSWER and any(e.cited for e in first.evidence)
    assert first.account.answer.prompt_tokens == fake_openai.PROMPT_TOKENS
    assert not server.requests[-1].get("stream")  # the client calls the generator's run
    second = chat.stream("When did she die?").run()
    assert second.retrieval.how == "model rewrite"  # the scripted rewrite, checked and used
    assert second.account.condense.calls == 1


@pytest.mark.parametrize("main", [llama_index_chat.main, haystack_chat.main])
def test_llm_object_needs_an_openai_compatible_model(main, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--llm-object", "--llm", "anthropic/claude-3-5-haiku-latest", "-q", "hi"])
    assert exited.value.code == 2
    assert "--llm-object needs the local model or an openai/NAME model" in capsys.readouterr().err
