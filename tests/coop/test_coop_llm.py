"""CoopRAG's LLM stages with a plain-object fake transport: unrolling and its repairs, the one
fallback, chain completion, answers, span checks, KeyExtract's stops, and the per-query account."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rag_multihop import Corpus, Query
from rag_multihop.coop import (
    ANSWER_SLOT,
    UNKNOWN,
    ChainReader,
    CoopRetriever,
    CoopSettings,
    LLMKeyExtractor,
    LLMUnroller,
    SimilarityKeyExtractor,
    Triple,
    UARRetriever,
    Unrolling,
)
from rag_multihop.coop import unroll as unroll_module
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMOutputError, LLMSettings, RawReply, prompts
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

MODEL = "openai/gpt-4o-mini"
PASSAGES = polish_wedding_passages()

GOOD_UNROLLING = json.dumps(
    {
        "sub_questions": ["Who directed Polish Wedding?", "Where was that director born?"],
        "chain": [
            {"head": "Polish Wedding", "relation": "directed by", "tail": UNKNOWN},
            {"head": UNKNOWN, "relation": "born in", "tail": ANSWER_SLOT},
        ],
    }
)
GOOD_COMPLETION = json.dumps(
    {
        "chain": [
            {"head": "Polish Wedding", "relation": "directed by", "tail": "Theresa Connelly"},
            {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
        ]
    }
)


def reply_for(kind: str) -> Callable[[str], str]:
    return lambda prompt: kind


class FakeLLM:
    """A ``Transport`` answering by prompt kind (unroll, complete, answer, key) and counting."""

    def __init__(self, **replies: str | Callable[[str], str]) -> None:
        self.replies: dict[str, Any] = {
            "unroll": GOOD_UNROLLING,
            "complete": GOOD_COMPLETION,
            "answer": '{"answer": "Philadelphia"}',
            "key": '{"answerable": true, "key_sentence": ""}',
            "repair": "still not JSON",
            **replies,
        }
        self.requests: list[Mapping[str, Any]] = []

    def check_model(self, model: str) -> None:
        return None

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def _kind(self, prompt: str) -> str:
        if "could not be used" in prompt:
            return "repair"
        if "Plan how to answer" in prompt:
            return "unroll"
        if "Complete the reasoning chain" in prompt:
            return "complete"
        if "Can the question be answered" in prompt:
            return "key"
        return "answer"

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self.requests.append(request)
        prompt = request["messages"][-1]["content"]
        reply = self.replies[self._kind(prompt)]
        text = reply(prompt) if callable(reply) else reply
        return RawReply(text, "stop", None, "gpt-4o-mini", 120, 20, 3e-5)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        await asyncio.sleep(0)
        return self.complete(request, api_key=api_key, timeout=timeout)

    def kinds(self) -> list[str]:
        return [self._kind(r["messages"][-1]["content"]) for r in self.requests]


def client(fake: FakeLLM) -> LLMClient:
    return LLMClient(LLMSettings(MODEL, max_retries=0), transport=fake)


def dense() -> DenseRetriever:
    return DenseRetriever.from_corpus(Corpus(PASSAGES), HashingEncoder())


# ------------------------------------------------------------------------ unrolling


def test_the_mask_tokens_match_the_prompts() -> None:
    assert (unroll_module.UNKNOWN, unroll_module.ANSWER_SLOT) == (
        prompts.UNKNOWN,
        prompts.ANSWER_SLOT,
    )


def test_unrolling_a_good_reply() -> None:
    fake = FakeLLM()
    unrolling, account = LLMUnroller(client(fake)).unroll(POLISH_WEDDING_QUESTION)
    assert unrolling.sub_questions == (
        "Who directed Polish Wedding?",
        "Where was that director born?",
    )
    assert unrolling.chain[-1] == Triple(UNKNOWN, "born in", ANSWER_SLOT)
    assert not unrolling.fallback and unrolling.issues == ()
    assert unrolling.masked == 2 and account.calls == 1
    assert unrolling.query_text() == (
        f"{POLISH_WEDDING_QUESTION} Who directed Polish Wedding? Where was that director born? "
        "Polish Wedding directed by. born in."
    )
    assert "<unknown>" in unrolling.query_text(masks=True)
    assert fake.requests[0]["max_tokens"] == 300


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I think the director was born in Philadelphia.", "malformed"),  # not JSON
        ('{"sub_questions": ["Who directed it?"], "chain": []}', "invalid"),  # no chain
        (
            '{"sub_questions": [], "chain": [{"head": "a", "relation": "b", "tail": "c"}]}',
            "invalid",
        ),
        ("", "empty"),
    ],
)
def test_an_unusable_reply_falls_back_to_the_raw_question(reply: str, reason: str, caplog) -> None:
    fake = FakeLLM(unroll=reply, repair=reply)
    unroller = LLMUnroller(client(fake))
    unrolling, account = unroller.unroll(POLISH_WEDDING_QUESTION)
    assert unrolling.fallback and unrolling.sub_questions == () and unrolling.chain == ()
    assert unrolling.query_text() == POLISH_WEDDING_QUESTION
    assert unrolling.issues == (f"unusable unrolling reply ({reason})",)
    assert account.calls == 2  # the one repair attempt is accounted
    assert unroller.failures == 1 and "using the raw question" in caplog.text
    with pytest.raises(LLMOutputError):
        LLMUnroller(client(FakeLLM(unroll=reply, repair=reply)), on_error="raise").unroll("Why?")


def test_every_entity_masked_is_flagged_and_kept() -> None:
    masked = json.dumps(
        {
            "sub_questions": ["Who directed it?"],
            "chain": [
                {"head": "?", "relation": "directed by", "tail": "[UNKNOWN]"},
                {"head": "<UNCERTAIN>", "relation": "born in", "tail": "<FILL>"},
            ],
        }
    )
    unrolling, _ = LLMUnroller(client(FakeLLM(unroll=masked))).unroll(POLISH_WEDDING_QUESTION)
    assert unrolling.issues == ("every entity of the chain is masked: it adds only its relations",)
    assert [t.head for t in unrolling.chain] == [UNKNOWN, UNKNOWN]
    assert unrolling.chain[-1].tail == ANSWER_SLOT
    assert unrolling.query_text().endswith("directed by. born in.")


def test_a_reply_that_repeats_the_question_is_repaired_and_flagged() -> None:
    repeated = json.dumps(
        {
            "sub_questions": [POLISH_WEDDING_QUESTION.upper(), "Who directed Polish Wedding?"],
            "chain": [
                {"head": "director", "relation": "of the film Polish Wedding", "tail": "born"},
                {"head": "director", "relation": "of the film Polish Wedding", "tail": "born"},
            ],
        }
    )
    unrolling, _ = LLMUnroller(client(FakeLLM(unroll=repeated))).unroll(POLISH_WEDDING_QUESTION)
    assert unrolling.sub_questions == ("Who directed Polish Wedding?",)
    assert unrolling.issues == (
        "a sub-question repeated the question; dropped",
        "a repeated triple was dropped",
        "the last tail was not the answer slot; replaced",
        "the chain only restates the question",
    )
    assert len(unrolling.chain) == 1 and unrolling.chain[0].tail == ANSWER_SLOT


def test_an_early_answer_slot_is_masked() -> None:
    early = json.dumps(
        {
            "sub_questions": ["Who directed it?"],
            "chain": [
                {"head": "Polish Wedding", "relation": "directed by", "tail": ANSWER_SLOT},
                {"head": UNKNOWN, "relation": "born in", "tail": ANSWER_SLOT},
            ],
        }
    )
    unrolling, _ = LLMUnroller(client(FakeLLM(unroll=early))).unroll(POLISH_WEDDING_QUESTION)
    assert unrolling.chain[0].tail == UNKNOWN
    assert unrolling.issues == ("triple 1 had the answer slot before the end; masked",)


@pytest.mark.parametrize("question", ["", "   ", None])
def test_an_empty_question_is_refused(question: Any) -> None:
    with pytest.raises(ValueError, match="question must be a non-empty string"):
        LLMUnroller(client(FakeLLM())).unroll(question)
    with pytest.raises(ValueError, match="on_error must be"):
        LLMUnroller(client(FakeLLM()), on_error="ignore")  # type: ignore[arg-type]


# ------------------------------------------------------------------------ reading


def unrolled() -> Unrolling:
    unrolling, _ = LLMUnroller(client(FakeLLM())).unroll(POLISH_WEDDING_QUESTION)
    return unrolling


def test_completion_and_answer_with_their_accounts() -> None:
    fake = FakeLLM()
    reading = ChainReader(client(fake), top_k=2).read(unrolled(), PASSAGES)
    assert reading.chain[1] == Triple("Theresa Connelly", "born in", "Philadelphia")
    assert reading.answer == "Philadelphia" and reading.answer_supported
    assert reading.unsupported == () and reading.issues == ()
    assert set(reading.calls) == {"complete", "answer"} and reading.account.calls == 2
    shown = fake.requests[0]["messages"][-1]["content"]
    assert shown.count("<passage id=") == 2  # top_k passages only
    assert [r["max_tokens"] for r in fake.requests] == [300, 48]


def test_invented_spans_are_detected_and_flagged() -> None:
    invented = GOOD_COMPLETION.replace("Philadelphia", "Boston")
    fake = FakeLLM(complete=invented, answer='{"answer": "Boston, Massachusetts"}')
    reading = ChainReader(client(fake)).read(unrolled(), PASSAGES)
    assert reading.unsupported == ("Boston", "Boston, Massachusetts")
    assert not reading.answer_supported
    assert reading.issues == ("2 span(s) not found in the passages",)


def test_completion_cannot_rewrite_known_entities_or_change_the_length() -> None:
    rewritten = json.dumps(
        {
            "chain": [
                {"head": "Rope", "relation": "directed by", "tail": "Theresa Connelly"},
                {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
                {"head": "Philadelphia", "relation": "in", "tail": "Pennsylvania"},
            ]
        }
    )
    reading = ChainReader(client(FakeLLM(complete=rewritten))).read(unrolled(), PASSAGES)
    assert reading.chain[0] == Triple("Polish Wedding", "directed by", "Theresa Connelly")
    assert len(reading.chain) == 2
    assert reading.issues[:2] == (
        "the completed chain has 3 triples for 2; realigned",
        "the completion rewrote entities the unrolled chain knew; kept the originals",
    )


def test_binary_questions_get_the_yes_no_schema_and_a_bad_answer_falls_back() -> None:
    question = "Were Polish Wedding and Rope directed by the same person?"
    unrolling = Unrolling(question, ("Who directed Rope?",), (Triple("Rope", "by", ANSWER_SLOT),))
    fake = FakeLLM(complete='{"chain": [{"head": "Rope", "relation": "by", "tail": "Spielberg"}]}')
    fake.replies["answer"] = '{"answer": "no"}'
    reading = ChainReader(client(fake)).read(unrolling, PASSAGES)
    assert reading.binary and reading.answer == "no"
    assert "This is a yes/no question" in fake.requests[-1]["messages"][-1]["content"]
    assert reading.unsupported == ("Spielberg",)  # the chain still invented a span

    maybe = FakeLLM(answer='{"answer": "maybe"}', repair='{"answer": "perhaps"}')
    reading = ChainReader(client(maybe)).read(unrolling, PASSAGES)
    assert (
        reading.answer == "" and "unusable answer reply (invalid); empty answer" in reading.issues
    )
    with pytest.raises(LLMOutputError):
        ChainReader(client(maybe), on_error="raise").read(unrolling, PASSAGES)


def test_a_raw_question_is_answered_without_a_completion_call() -> None:
    fake = FakeLLM()
    reading = ChainReader(client(fake)).read(Unrolling(POLISH_WEDDING_QUESTION), PASSAGES)
    assert fake.kinds() == ["answer"] and reading.chain == ()
    with pytest.raises(ValueError, match="at least one passage"):
        ChainReader(client(fake)).read(Unrolling(POLISH_WEDDING_QUESTION), [])
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        ChainReader(client(fake), top_k=0)


# ------------------------------------------------------------------------ pipeline


def test_full_pipeline_accounts_for_every_call() -> None:
    fake = FakeLLM()
    coop = CoopRetriever.with_llm(dense(), client(fake), candidates=100, top_k=3)
    result = coop.run(Query(POLISH_WEDDING_QUESTION, id="q1"), k=3)
    assert fake.kinds() == ["unroll", "complete", "answer"]
    trace = result.trace
    assert trace.stages == ("unroll", "retrieve", "read")
    assert set(trace.accounts) == {"unroll", "complete", "answer"}
    assert trace.account is not None and trace.account.calls == 3
    assert result.answer == "Philadelphia" and result.chain[1].tail == "Philadelphia"
    assert len(result.candidates) == 3  # K = 100 is larger than the 5-passage pool
    assert trace.search_texts == (trace.unrolling.query_text(),)
    json.dumps(trace.to_dict())  # JSON-ready
    assert trace.fallbacks == 0


def test_keyextract_that_never_judges_answerable_is_ended_by_the_budget() -> None:
    def key(prompt: str) -> str:
        searched = prompt.split("</question>")[0]
        sentence = (
            "Theresa Connelly is an American screenwriter born in Philadelphia."
            if "directed by Theresa Connelly" in searched
            else "Polish Wedding is a 1998 film written and directed by Theresa Connelly."
        )
        return json.dumps({"answerable": False, "key_sentence": sentence})

    fake = FakeLLM(key=key)
    coop = CoopRetriever.with_llm(
        dense(), client(fake), keyextract=True, keyextract_rounds=2, top_k=5
    )
    result = coop.run(Query(POLISH_WEDDING_QUESTION, id="q1"), k=3)
    trace = result.trace
    assert trace.stop == "budget" and len(trace.rounds) == 2
    assert not any(r.answerable for r in trace.rounds)
    assert len(trace.search_texts) == 3  # the unrolled question, then one per round
    assert trace.search_texts[1].endswith("directed by Theresa Connelly.")
    assert fake.kinds() == ["unroll", "key", "key", "complete", "answer"]
    assert trace.account is not None and trace.account.calls == 5
    assert {"keyextract_1", "keyextract_2"} <= set(trace.accounts)


def test_keyextract_stops_when_answerable_or_when_the_sentence_is_not_in_the_passages() -> None:
    coop = CoopRetriever.with_llm(dense(), client(FakeLLM()), keyextract=True, top_k=3)
    trace = coop.run(Query(POLISH_WEDDING_QUESTION), k=3).trace
    assert trace.stop == "answerable" and len(trace.rounds) == 1
    assert len(trace.search_texts) == 1

    invented = '{"answerable": false, "key_sentence": "Theresa Connelly grew up in Ohio."}'
    coop = CoopRetriever.with_llm(dense(), client(FakeLLM(key=invented)), keyextract=True, top_k=3)
    trace = coop.run(Query(POLISH_WEDDING_QUESTION), k=3).trace
    assert trace.stop == "no new sentence"
    assert trace.rounds[0].issue == "the key sentence is not in the passages; ignored"

    broken = CoopRetriever.with_llm(dense(), client(FakeLLM(key="nope")), keyextract=True, top_k=3)
    trace = broken.run(Query(POLISH_WEDDING_QUESTION), k=3).trace
    assert trace.stop == "unusable reply" and trace.fallbacks == 1


def test_llm_free_keyextract_picks_similar_sentences_until_the_budget() -> None:
    encoder = HashingEncoder()
    coop = CoopRetriever(
        dense(),
        key_extractor=SimilarityKeyExtractor(encoder),
        keyextract_rounds=2,
        top_k=2,
    )
    trace = coop.run(Query(POLISH_WEDDING_QUESTION), k=3).trace
    assert trace.account is None and trace.stop == "budget"
    assert len(trace.rounds) == 2 and all(r.sentence and not r.answerable for r in trace.rounds)
    assert trace.search_texts[0] == POLISH_WEDDING_QUESTION
    assert trace.search_texts[2] == " ".join(
        [POLISH_WEDDING_QUESTION, *(r.sentence for r in trace.rounds)]
    )


def test_async_run_matches_sync_run() -> None:
    fake = FakeLLM()
    coop = CoopRetriever.with_llm(dense(), client(fake), top_k=3)
    query = Query(POLISH_WEDDING_QUESTION, id="q1")
    sync = coop.run(query, k=3)
    asynchronous = asyncio.run(coop.arun(query, k=3))
    assert [c.id for c in asynchronous.candidates] == [c.id for c in sync.candidates]
    assert asynchronous.answer == sync.answer
    assert asynchronous.trace.accounts.keys() == sync.trace.accounts.keys()


def test_uar_sub_question_mode_fuses_one_search_per_sub_question() -> None:
    uar = UARRetriever(dense(), LLMUnroller(client(FakeLLM())), uar_mode="sub-questions")
    result = uar.run(Query(POLISH_WEDDING_QUESTION, id="q1"), k=50)
    assert len(result.candidates) == len(PASSAGES)
    top = result.candidates[0]
    assert {"search_0", "search_0_cal", "uar"} <= set(top.signals)
    assert result.query_text.count(" | ") == 2
    with pytest.raises(ValueError, match="uar_mode must be one of"):
        UARRetriever(dense(), uar_mode="each")


def test_settings_validation() -> None:
    for kwargs, message in (
        ({"candidates": 0}, "candidates must be a positive integer, got 0"),
        ({"top_k": -1}, "top_k must be a positive integer, got -1"),
        ({"keyextract_rounds": -1}, "keyextract_rounds must be an integer >= 0"),
        ({"uar_mode": "all"}, "uar_mode must be one of"),
    ):
        with pytest.raises(ValueError, match=message):
            CoopSettings(**kwargs)
    with pytest.raises(ValueError, match="needs a key_extractor"):
        CoopRetriever(dense(), keyextract_rounds=1)
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        CoopRetriever(dense()).run("Who?", k=0)


def test_a_client_error_propagates_from_run() -> None:
    class Down(FakeLLM):
        def complete(self, request: Mapping[str, Any], **kwargs: Any) -> RawReply:
            raise TimeoutError("the provider timed out")

    coop = CoopRetriever.with_llm(dense(), client(Down()))
    with pytest.raises(Exception, match="timed out"):
        coop.run(Query(POLISH_WEDDING_QUESTION))


def test_key_extractor_validation() -> None:
    with pytest.raises(ValueError, match="on_error must be"):
        LLMKeyExtractor(client(FakeLLM()), on_error="ignore")  # type: ignore[arg-type]
