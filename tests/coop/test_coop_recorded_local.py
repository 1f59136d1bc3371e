"""CoopRAG's four prompts answered by the embedded local model (SmolLM2-135M), recorded.

The cassettes in ``tests/cassettes/test_coop_recorded_local/`` are real recordings of
schema-constrained replies (see tests/cassettes/README.md). Replay needs no server (matching
on method and path). A 135M model's content is poor, so the assertions are about what the
library guarantees whatever the content: a validated reply or the documented fallback, the
repairs and flags, and the accounting. To re-record:

    rag-multihop llm serve &                       # prints api_base=http://127.0.0.1:PORT/v1
    RAG_MULTIHOP_TEST_LOCAL_API_BASE=http://127.0.0.1:PORT/v1 \\
        python -m pytest tests/coop/test_coop_recorded_local.py --record-mode=rewrite
"""

from __future__ import annotations

import os

import pytest
from vcr.cassette import Cassette

from rag_multihop.coop import (
    ANSWER_SLOT,
    UNKNOWN,
    ChainReader,
    LLMKeyExtractor,
    LLMUnroller,
    Triple,
    Unrolling,
)
from rag_multihop.coop.reader import in_passages
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.testing import POLISH_WEDDING_QUESTION, polish_wedding_passages

API_BASE = os.environ.get("RAG_MULTIHOP_TEST_LOCAL_API_BASE", "http://127.0.0.1:8080/v1")
PASSAGES = polish_wedding_passages()[:3]
UNROLLED = Unrolling(
    POLISH_WEDDING_QUESTION,
    ("Who directed Polish Wedding?", "Where was that director born?"),
    (Triple("Polish Wedding", "directed by", UNKNOWN), Triple(UNKNOWN, "born in", ANSWER_SLOT)),
)


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    return {**vcr_config, "match_on": ["method", "path"]}


@pytest.fixture
def client() -> LLMClient:
    settings = LLMSettings(
        "openai/smollm2-135m",
        api_base=API_BASE,
        timeout=600,
        max_retries=0,
        max_concurrency=1,
        json_schema=True,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
    )
    return LLMClient(settings)


@pytest.mark.vcr
def test_unrolling(client: LLMClient, vcr: Cassette) -> None:
    unrolling, account = LLMUnroller(client).unroll(POLISH_WEDDING_QUESTION)
    assert account.calls == len(vcr.requests) and account.prompt_tokens > 0
    if unrolling.fallback:
        assert unrolling.query_text() == POLISH_WEDDING_QUESTION
    else:  # what the checks guarantee for any valid reply
        assert unrolling.chain and unrolling.chain[-1].tail == ANSWER_SLOT
        assert len(set(unrolling.chain)) == len(unrolling.chain)
        assert POLISH_WEDDING_QUESTION not in unrolling.sub_questions
    assert unrolling.query_text().startswith(POLISH_WEDDING_QUESTION)


@pytest.mark.vcr
def test_completion_and_answer(client: LLMClient, vcr: Cassette) -> None:
    reading = ChainReader(client, top_k=3).read(UNROLLED, PASSAGES)
    assert set(reading.calls) == {"complete", "answer"}
    assert reading.account.calls == len(vcr.requests)
    assert len(reading.chain) == len(UNROLLED.chain)  # realigned whatever came back
    assert reading.chain[0].head == "Polish Wedding"  # a known entity is never rewritten
    assert all(span for span in reading.unsupported)
    assert isinstance(reading.answer, str)


@pytest.mark.vcr
def test_key_extraction(client: LLMClient, vcr: Cassette) -> None:
    step = LLMKeyExtractor(client).extract(POLISH_WEDDING_QUESTION, PASSAGES)
    assert step.account is not None and step.account.calls == len(vcr.requests)
    if step.sentence:  # a sentence is only kept when the passages hold it
        assert in_passages(step.sentence, PASSAGES)
