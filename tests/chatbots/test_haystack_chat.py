"""The Haystack chat's loop: a plain-object fake generator and Haystack's own
OpenAIChatGenerator against the scripted OpenAI-compatible server."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import chatkit
import fake_openai
import pytest
from haystack import component
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack_chat import HaystackChat, HaystackStack, build_retrieval, chat_generator

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
    condense = generators[0]
    stream = chat.stream(QUESTION)
    assert "".join(stream) == fake_openai.ANSWER
    first = stream.result
    assert first.retrieval.standalone == QUESTION and first.account.total.calls == 1
    assert first.generated == fake_openai.ANSWER and "Marit Hallendor" in first.answer
    cited = [e.source for e in first.evidence if e.cited]
    assert cited and [e.number for e in first.evidence if e.cited] == chatkit.cited_numbers(
        first.answer, len(first.evidence)
    )
    second = chat.stream("And when did she die?").run()
    assert second.retrieval.how == "model rewrite"  # the scripted rewrite passes the check
    assert QUESTION in condense.prompts[0]  # the condense pipeline saw the history
    account = second.account
    assert account.total.calls == account.condense.calls + account.answer.calls == 2
    assert account.total.total_tokens == 98 and account.total.cost == 0.0


def test_a_small_model_condenses_without_the_pipeline(stack: HaystackStack) -> None:
    generators: list[FakeGenerator] = []

    def factory(settings: LLMSettings) -> FakeGenerator:
        generators.append(FakeGenerator())
        return generators[-1]

    chat = HaystackChat(stack, SETTINGS, "multihop", generator_factory=factory, small_model=True)
    chat.stream(QUESTION).run()
    second = chat.stream("When did she die?").run()
    assert second.retrieval.standalone == "When did Marit Hallendor die?"
    assert generators[0].prompts == [] and second.account.condense.calls == 0
    assert [e.source.id for e in second.evidence if e.cited] == ["marit-hallendor"]


def test_the_model_sees_the_documents_in_card_order(stack: HaystackStack) -> None:
    generators: list[FakeGenerator] = []

    def factory(settings: LLMSettings) -> FakeGenerator:
        generators.append(FakeGenerator())
        return generators[-1]

    chat = HaystackChat(stack, SETTINGS, "multihop", generator_factory=factory)
    result = chat.stream(QUESTION).run()
    prompt = generators[1].prompts[-1]
    for e in result.evidence:
        assert f"[{e.number}] {e.source.title}:" in prompt
    assert [e.step for e in result.evidence][:2] == ["hop 1", "hop 2"]


def test_openai_chat_generator_against_an_openai_compatible_server(stack, fake_server) -> None:
    server, url = fake_server
    settings = LLMSettings("openai/fake", api_base=url, max_retries=0)
    chat = HaystackChat(stack, settings, "bridge", generator_factory=chat_generator)
    result = chat.stream(QUESTION).run()
    assert result.generated == fake_openai.ANSWER and result.error is None
    assert server.requests[-1]["stream"] is True
    assert result.account.answer.prompt_tokens == fake_openai.PROMPT_TOKENS  # from the usage chunk
    assert any(e.cited for e in result.evidence)
    broken = chat.stream(f"{fake_openai.FAIL} now").run()
    assert broken.error is not None and broken.answer  # the passages' answer stands
    chat.reset()  # the failed question stays in the history, where it would break it again
    assert chat.stream(QUESTION).run().generated == fake_openai.ANSWER


@component
class UnreachableGenerator:
    """A generator whose server cannot be reached (as ``OpenAIChatGenerator`` says it)."""

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, Any]:
        raise ConnectionError("Connection error.")


def test_a_failing_model_is_named_with_its_cause_in_one_line(stack: HaystackStack) -> None:
    chat = HaystackChat(
        stack, SETTINGS, "dense", generator_factory=lambda s: UnreachableGenerator()
    )
    result = chat.stream(QUESTION).run()
    assert result.error is not None and "\n" not in result.error and result.answer
    assert result.error.startswith("PipelineRuntimeError: ")  # Haystack's wrapper, then the cause
    assert result.error.endswith(
        "Component name: 'llm' Component type: 'UnreachableGenerator' Error: Connection error."
    )


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


def test_sessions_building_their_pipelines_at_once_build_the_index_once(
    tmp_path: Path, hashing_encoder, index_builds: list[Path]
) -> None:
    shared = HaystackStack(chatkit.load_chat_corpus(encoder=hashing_encoder, cache=tmp_path))
    with ThreadPoolExecutor(3) as pool:  # each session's first multihop question
        list(pool.map(lambda _: build_retrieval(shared, "multihop"), range(3)))
    assert len(index_builds) == 1
