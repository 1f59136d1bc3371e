"""A chat callable (a framework's LLM object, wrapped) as the client's model: account, cache,
structured replies and their repair, timeouts and retries, the methods' ``with_llm``, and
wrong-type errors that never show a repr."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence

import pytest

from rag_multihop import Corpus, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.coop import CoopRetriever
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import (
    ChatReply,
    LLMCache,
    LLMCallError,
    LLMClient,
    LLMOutputError,
)
from rag_multihop.llm.prompts import JudgeScore
from rag_multihop.llm.resolve import make_client
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

CHAIN = [
    {"head": "Polish Wedding", "relation": "directed by", "tail": "Theresa Connelly"},
    {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
]
OMNI = json.dumps(  # one JSON object that every reply schema of the methods accepts
    {
        "score": 7,
        "e1": "Theresa Connelly",
        "e2": "Philadelphia",
        "queries": ["Where was Theresa Connelly born?"],
        "sub_questions": ["Who directed Polish Wedding?", "Where was that director born?"],
        "chain": CHAIN,
        "answer": "Philadelphia",
        "answerable": True,
        "key_sentence": "",
    }
)


class Scripted:
    """A plain-object chat model: replies in order (the last one repeats), usage optional."""

    def __init__(
        self,
        *replies: str,
        usage: tuple[int, int] | None = None,
        model_id: str = "fake/scripted",
        delay: float = 0.0,
        failures: Sequence[BaseException] = (),
    ) -> None:
        self.replies = list(replies) or [OMNI]
        self.usage = usage
        self.model_id = model_id
        self.delay = delay
        self.failures = list(failures)
        self.seen: list[list[dict[str, str]]] = []

    def _reply(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        self.seen.append([dict(m) for m in messages])
        if self.failures:
            raise self.failures.pop(0)
        text = self.replies[min(len(self.seen), len(self.replies)) - 1]
        prompt, completion = self.usage if self.usage else (None, None)
        return ChatReply(text, prompt_tokens=prompt, completion_tokens=completion)

    def chat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        time.sleep(self.delay)
        return self._reply(messages)

    async def achat(self, messages: Sequence[Mapping[str, str]]) -> ChatReply:
        await asyncio.sleep(self.delay)
        return self._reply(messages)


class RateLimited(Exception):
    status_code = 429


def no_wait(seconds: float) -> None:
    return None


def test_the_account_holds_reported_usage_or_marks_an_estimate() -> None:
    reported = LLMClient.from_chat(Scripted("Paris.", usage=(30, 2))).complete("Capital?")
    assert reported.text == "Paris." and reported.model == "fake/scripted"
    assert (reported.account.calls, reported.account.total_tokens) == (1, 32)
    assert not reported.account.estimated and reported.account.cost is None
    guessed = LLMClient.from_chat(Scripted("Paris, France.")).complete("What is the capital?")
    # about four characters per token, rounded up: 20 -> 5 and 14 -> 4
    assert (guessed.account.prompt_tokens, guessed.account.completion_tokens) == (5, 4)
    assert guessed.account.estimated and guessed.account.estimated_tokens == 9


def test_settings_prices_apply_to_a_chat_model() -> None:
    client = LLMClient.from_chat(
        Scripted("ok", usage=(100, 10)), input_cost_per_token=1e-6, output_cost_per_token=2e-6
    )
    assert client.complete("hi").account.cost == pytest.approx(1.2e-4)


def test_a_cached_reply_is_served_without_calling_the_object(tmp_path) -> None:
    chat = Scripted("Paris.", usage=(30, 2))
    cache = LLMCache(tmp_path / "llm.sqlite")
    client = LLMClient.from_chat(chat, cache=cache)
    first, second = client.complete("Capital?"), client.complete("Capital?")
    assert len(chat.seen) == 1 and second.cached and second.text == "Paris."
    assert second.account.cache_hits == 1 and second.account.calls == 0 and not first.cached
    other = Scripted("Lyon.", model_id="fake/other")  # another identity, another key
    assert LLMClient.from_chat(other, cache=cache).complete("Capital?").text == "Lyon."


def test_a_malformed_structured_reply_is_repaired_once() -> None:
    chat = Scripted("Sure! The score is high.", '```json\n{"score": 8}\n```')
    reply = LLMClient.from_chat(chat).complete_json("Score it.", JudgeScore)
    assert reply.value.score == 8.0 and reply.repaired and reply.account.calls == 2
    assert "could not be used" in chat.seen[1][-1]["content"]  # the repair prompt


def test_an_unusable_structured_reply_raises_or_gives_the_default() -> None:
    with pytest.raises(LLMOutputError) as caught:
        LLMClient.from_chat(Scripted("no JSON here")).complete_json("Score it.", JudgeScore)
    assert caught.value.account.calls == 2
    reply = LLMClient.from_chat(Scripted("no JSON here")).complete_json(
        "Score it.", JudgeScore, default=JudgeScore(score=0)
    )
    assert reply.fallback and reply.value.score == 0


def test_a_slow_object_times_out_with_a_clear_error() -> None:
    client = LLMClient.from_chat(
        Scripted("late", delay=2.0), timeout=0.05, max_retries=1, backoff_base=0
    )
    with pytest.raises(LLMCallError, match=r"after 2 attempt.*timeout=0.05 s.*TimeoutError"):
        client.complete("hi")
    with pytest.raises(LLMCallError, match="did not reply within the timeout of 0.05 s"):
        asyncio.run(client.acomplete("hi"))


def test_provider_errors_of_the_object_are_retried() -> None:
    chat = Scripted("ok", failures=[RateLimited("slow down")])
    client = LLMClient.from_chat(chat, backoff_base=0)
    client._sleep = no_wait
    reply = client.complete("hi")
    assert reply.text == "ok" and reply.account.retries == 1 and len(chat.seen) == 2


def test_an_object_returning_no_chat_reply_is_named() -> None:
    class Wrong(Scripted):
        def chat(self, messages):  # type: ignore[no-untyped-def]
            return "plain text"

    with pytest.raises(TypeError, match="Wrong.chat must return a ChatReply, got str"):
        LLMClient.from_chat(Wrong()).complete("hi")


def test_a_stream_delivers_the_reply_as_one_piece() -> None:
    stream = LLMClient.from_chat(Scripted("Paris.", usage=(3, 2))).stream("Capital?")
    assert list(stream) == ["Paris."] and stream.reply is not None
    assert stream.reply.account.total_tokens == 5


class Secretive:
    """Not a chat model; its repr holds a key, as some framework objects' do."""

    def __repr__(self) -> str:
        return "Secretive(api_key='sk-proj-SECRETSECRETSECRET')"


def test_a_wrong_llm_type_is_named_without_its_repr() -> None:
    with pytest.raises(TypeError) as caught:
        make_client(Secretive())
    message = str(caught.value)
    assert message.startswith("llm must be a litellm model string, LLMSettings, LLMClient")
    assert message.endswith("got Secretive") and "SECRET" not in message
    with pytest.raises(TypeError, match="got Secretive") as caught:
        CoopRetriever.with_llm(dense(), Secretive())  # type: ignore[arg-type]
    assert "SECRET" not in str(caught.value)


def test_a_chat_model_with_a_key_for_its_identity_is_refused_unseen() -> None:
    key = "sk-proj-" + "AbC1" * 12
    with pytest.raises(ValueError, match="llm.model_id looks like an API key") as caught:
        make_client(Scripted(model_id=key))
    assert key not in str(caught.value)


def test_a_chat_model_with_an_endpoint_is_refused() -> None:
    with pytest.raises(ValueError, match="api_base and api_key_env apply to a model-string"):
        make_client(Scripted(), api_base="http://localhost:1/v1")


def dense() -> DenseRetriever:
    return DenseRetriever.from_corpus(Corpus(polish_wedding_passages()), HashingEncoder())


def test_coop_runs_every_llm_stage_through_a_chat_model() -> None:
    chat = Scripted(usage=(100, 20))
    coop = CoopRetriever.with_llm(dense(), chat, keyextract=True, top_k=3)
    result = coop.run(Query(POLISH_WEDDING_QUESTION, id="q"), k=3)
    assert result.answer == "Philadelphia"
    assert result.trace.account is not None
    assert result.trace.account.calls == len(chat.seen) >= 3
    assert result.trace.account.total_tokens == 120 * len(chat.seen)
    again = asyncio.run(coop.arun(Query(POLISH_WEDDING_QUESTION, id="q"), k=3))
    assert again.answer == "Philadelphia"


def test_bridge_plans_and_judges_through_a_chat_model() -> None:
    chat = Scripted()
    bridge = BridgeRetriever.with_llm(dense(), chat)
    result = bridge.run(Query(POLISH_WEDDING_QUESTION), 3)
    assert result.trace.account is not None and result.trace.account.calls == len(chat.seen)
    assert result.trace.account.estimated  # the object reported no usage
    judged = [c for c in result.candidates if "judge" in c.signals]
    assert judged and all(c.signals["judge"] == pytest.approx(0.7) for c in judged)
    reranker = BridgeReranker.with_llm(Scripted())
    ranked = reranker.rerank(Query(POLISH_WEDDING_QUESTION), result.candidates, 2)
    assert len(ranked) == 2
