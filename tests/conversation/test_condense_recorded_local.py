"""A follow-up rewritten by the embedded local model (SmolLM2-135M), then checked.

The cassettes in ``tests/cassettes/test_condense_recorded_local/`` are real recordings (see
tests/cassettes/README.md). Replay needs no server (it matches on method and path). The
assertions pin what the recorded rewrite was and what the check made of it. To re-record:

    rag-multihop llm serve &                       # prints api_base=..., api_key=KEY
    RAG_MULTIHOP_TEST_LOCAL_API_BASE=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=KEY \\
        python -m pytest tests/conversation/test_condense_recorded_local.py --record-mode=rewrite
"""

from __future__ import annotations

import os

import pytest
from vcr.cassette import Cassette

from rag_multihop.conversation import (
    Subject,
    Turn,
    check_rewrite,
    condense,
    condense_checked,
    condense_prompt,
)
from rag_multihop.llm import LLMClient, LLMSettings

API_BASE = os.environ.get("RAG_MULTIHOP_TEST_LOCAL_API_BASE", "http://127.0.0.1:8080/v1")
FIRST = "Where was the founder of Veldmark Ropeworks born?"
ANSWER = (
    "Veldmark Ropeworks was a Norvalish rope manufacturer founded in 1868 in Kelmsby by Marit "
    "Hallendor [1]. Born in Brennick, a mill town of the Merrin Valley, she apprenticed with a "
    "sailmaker [2]."
)
HISTORY = [Turn(FIRST, (Subject("Veldmark Ropeworks"), Subject("Marit Hallendor", person=True)))]


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    return {**vcr_config, "match_on": ["method", "path"]}


@pytest.fixture
def client() -> LLMClient:
    settings = LLMSettings(
        "openai/smollm2-135m",
        api_base=API_BASE,
        max_retries=0,
        max_concurrency=1,
        max_tokens=40,
        timeout=600,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
    )
    return LLMClient(settings)


def _rewrite(client: LLMClient, question: str) -> str:
    return client.complete(condense_prompt([(FIRST, ANSWER)], question)).text


@pytest.mark.vcr
def test_a_statement_rewrite_falls_back_to_the_llm_free_condensation(
    client: LLMClient, vcr: Cassette
) -> None:
    """Recorded 2026-11-25: the model answered with a statement about the previous answer
    (the failure of issue 25), cut at 40 tokens; the check refuses it."""
    rewrite = _rewrite(client, "When did she die?")
    assert rewrite.startswith("The founder of Veldmark Ropeworks was born in 1868")
    assert check_rewrite("When did she die?", rewrite) == "not a question"
    result = condense_checked("When did she die?", HISTORY, rewrite)
    assert result.standalone == condense("When did she die?", HISTORY).standalone
    assert result.standalone == "When did Marit Hallendor die?"
    assert result.how == "model rewrite refused: not a question; refers back: she"
    assert len(vcr) == 1
