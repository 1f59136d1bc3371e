"""The Haystack chat's loop: a plain-object fake generator and Haystack's own
OpenAIChatGenerator against the scripted OpenAI-compatible server."""

from collections.abc import Callable
from typing import Any

import chatkit
import fake_openai
import pytest
from haystack import component
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack_chat import HaystackChat, HaystackStack, chat_generator

from rag_multihop.llm import LLMSettings

SETTINGS = LLMSettings("openai/fake", api_base="http://127.0.0.1:9/v1", max_retries=0)
QUESTION = "Where was the founder of Veldmark Ropeworks born?"


@component
class FakeGenerator:
    """Answers like the scripted server, streaming word by word; reports usage in meta."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, Any]:
        self.prompts.append("\n".join(m.text or "" for m in messages))
        text = fake_openai.reply_text([{"content": m.text} for m in messages])
        for i, word in enumerate(text.split(" ")):
            if streaming_callback is not None:
                streaming_callback(StreamingChunk(content=(" " if i else "") + word))
        usage = {"prompt_tokens": 40, "completion_tokens": 9}
        return {"replies": [ChatMessage.from_assistant(text, meta={"usage": usage, "cost": 0.0})]}


@pytest.fixture(scope="module")
def stack(demo_corpus: chatkit.ChatCorpus) -> HaystackStack:
    return HaystackStack(demo_corpus)


def test_follow_up_condensed_citations_and_account(stack: HaystackStack) -> None:
    generators: list[FakeGenerator] = []

    def factory(settings: LLMSettings) -> FakeGenerator:
        generators.append(FakeGenerator())
        return generators[-1]

    chat = HaystackChat(stack, SETTINGS, "dense", generator_factory=factory)
    stream = chat.stream(QUESTION)
    assert "".join(stream) == fake_openai.ANSWER
    first = stream.result
    assert first.retrieval.standalone == QUESTION and first.account.total.calls == 1
    cited = sorted((e for e in first.evidence if e.cited), key=lambda e: e.number)
    assert [e.source for e in cited] == list(first.retrieval.sources[:2])
    second = chat.stream("When did she die?").run()
    assert second.retrieval.standalone == f"{fake_openai.STANDALONE} When did she die?"
    assert QUESTION in generators[0].prompts[0]  # the condense pipeline saw the history
    account = second.account
    assert account.total.calls == account.condense.calls + account.answer.calls == 2
    assert account.total.total_tokens == 98 and account.total.cost == 0.0


def test_answer_builder_references_match_the_evidence(stack: HaystackStack) -> None:
    chat = HaystackChat(
        stack, SETTINGS, "graph-fusion", generator_factory=lambda s: FakeGenerator()
    )
    pipeline, (_, sockets) = chat.pipeline()
    data: dict[str, dict[str, Any]] = {"prompt_builder": {"history": ""}}
    for socket in sockets:
        name, _, field = socket.partition(".")
        data.setdefault(name, {})[field] = QUESTION
    answer = pipeline.run(data)["answer_builder"]["answers"][0]
    result = chat.stream(QUESTION).run()
    cited = [e.source.id for e in sorted(result.evidence, key=lambda e: e.number) if e.cited]
    assert [d.id for d in answer.documents] == cited


def test_openai_chat_generator_against_an_openai_compatible_server(stack, fake_server) -> None:
    server, url = fake_server
    settings = LLMSettings("openai/fake", api_base=url, max_retries=0)
    chat = HaystackChat(stack, settings, "bridge", generator_factory=chat_generator)
    result = chat.stream(QUESTION).run()
    assert result.answer == fake_openai.ANSWER
    assert server.requests[-1]["stream"] is True
    assert result.account.answer.prompt_tokens == fake_openai.PROMPT_TOKENS  # from the usage chunk
    assert any(e.cited for e in result.evidence)
    with pytest.raises(Exception, match="(?i)incomplete|peer closed|connection"):
        chat.stream(f"{fake_openai.FAIL} now").run()
    assert chat.stream("And then?").run().answer == fake_openai.ANSWER


def test_coop_reranks_the_dense_pool_with_rala(stack: HaystackStack) -> None:
    chat = HaystackChat(stack, SETTINGS, "coop", generator_factory=lambda s: FakeGenerator())
    result = chat.stream(QUESTION).run()
    sources = result.retrieval.sources
    assert result.retrieval.method == "coop" and len(sources) == chatkit.TOP_K
    assert all("rala" in s.signals for s in sources)
    assert [s.signals["rala"] for s in sources] == sorted(
        (s.signals["rala"] for s in sources), reverse=True
    )
    assert {e.role for e in result.evidence} == {"ranked by CoopRAG RaLa rerank"}


@pytest.mark.parametrize("method", ["bridge", "multihop"])
def test_the_chain_comes_from_the_components_trace(stack: HaystackStack, method: str) -> None:
    chat = HaystackChat(stack, SETTINGS, method, generator_factory=lambda s: FakeGenerator())
    result = chat.stream(QUESTION).run()
    trace = result.retrieval.trace
    assert trace is not None
    first = trace["bridge_id"] if method == "bridge" else trace["pair"][0]
    hop1 = [e.source.id for e in result.evidence if e.step == "hop 1"]
    assert hop1[0] == first and any(e.step == "hop 2" for e in result.evidence)


def test_multihop_reads_the_persisted_corpus_index(stack: HaystackStack) -> None:
    chat = HaystackChat(stack, SETTINGS, "multihop", generator_factory=lambda s: FakeGenerator())
    result = chat.stream(QUESTION).run()
    sources = result.retrieval.sources
    assert result.retrieval.method == "multihop" and len(sources) == chatkit.TOP_K
    assert sum(bool(s.signals.get("pair")) for s in sources) == 2
    assert list(stack.corpus.folder.glob("corpus-v*.idx/CURRENT"))
    assert {"hop 1", "hop 2"} <= {e.step for e in result.evidence}
