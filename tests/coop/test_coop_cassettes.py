"""CoopRAG's LLM calls replayed through litellm from scripted cassettes: the malformed
unrolling replies of the issue (not JSON, no chain, every entity masked, the question
repeated) and one good pipeline run.

The cassettes in ``tests/cassettes/test_coop_cassettes/`` hold requests as litellm really sent
them and replies scripted by ``tests/coop/scripted_llm.py`` (a local OpenAI-compatible stub;
see tests/cassettes/README.md). Replay matches on method and path only. To re-record:

    RAG_MULTIHOP_RECORD_COOP_CASSETTES=1 \\
        python -m pytest tests/coop/test_coop_cassettes.py --record-mode=rewrite
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from vcr.cassette import Cassette

from rag_multihop import Corpus, Query
from rag_multihop.coop import ANSWER_SLOT, UNKNOWN, CoopRetriever, LLMUnroller
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages
from tests.coop import scripted_llm

RECORD = bool(os.environ.get("RAG_MULTIHOP_RECORD_COOP_CASSETTES"))
REPLAY_BASE = "http://127.0.0.1:8089/v1"

SCRIPTS = {
    "test_unrolling_reply_not_json": "I believe the director was born in Philadelphia.",
    "test_unrolling_reply_without_chain": json.dumps(
        {"sub_questions": ["Who directed Polish Wedding?"], "chain": []}
    ),
    "test_unrolling_reply_masking_every_entity": json.dumps(
        {
            "sub_questions": ["Who directed the film?", "Where was the director born?"],
            "chain": [
                {"head": UNKNOWN, "relation": "directed by", "tail": UNKNOWN},
                {"head": UNKNOWN, "relation": "born in", "tail": ANSWER_SLOT},
            ],
        }
    ),
    "test_unrolling_reply_repeating_the_question": json.dumps(
        {
            "sub_questions": [POLISH_WEDDING_QUESTION],
            "chain": [
                {
                    "head": "director of the film Polish Wedding",
                    "relation": "born",
                    "tail": "where",
                }
            ],
        }
    ),
}


@pytest.fixture(scope="module")
def vcr_config(vcr_config: dict[str, object]) -> dict[str, object]:
    return {**vcr_config, "match_on": ["method", "path"]}


@pytest.fixture
def api_base(request: pytest.FixtureRequest) -> Iterator[str]:
    """The scripted server while recording; a placeholder address on replay."""
    if not RECORD:
        yield REPLAY_BASE
        return
    script = SCRIPTS.get(request.node.name)
    replies = {"unroll": script, "repair": script} if script is not None else {}
    server, url = scripted_llm.start(**replies)
    yield url
    server.shutdown()


def client(api_base: str) -> LLMClient:
    settings = LLMSettings(
        "openai/scripted",
        api_base=api_base,
        max_retries=0,
        json_schema=False,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
    )
    return LLMClient(settings)


def unroll(api_base: str):
    return LLMUnroller(client(api_base)).unroll(POLISH_WEDDING_QUESTION)


@pytest.mark.vcr
def test_unrolling_reply_not_json(api_base: str, vcr: Cassette) -> None:
    unrolling, account = unroll(api_base)
    assert unrolling.fallback and unrolling.issues == ("unusable unrolling reply (malformed)",)
    assert unrolling.query_text() == POLISH_WEDDING_QUESTION
    assert account.calls == 2 and (RECORD or vcr.play_count == 2)  # the reply, one repair


@pytest.mark.vcr
def test_unrolling_reply_without_chain(api_base: str, vcr: Cassette) -> None:
    unrolling, account = unroll(api_base)
    assert unrolling.fallback and unrolling.issues == ("unusable unrolling reply (invalid)",)
    assert account.calls == 2 and (RECORD or vcr.play_count == 2)
    repair = json.loads(vcr.requests[1].body)["messages"][-1]["content"]
    assert "chain" in repair and "could not be used" in repair


@pytest.mark.vcr
def test_unrolling_reply_masking_every_entity(api_base: str, vcr: Cassette) -> None:
    unrolling, account = unroll(api_base)
    assert not unrolling.fallback and unrolling.masked == 3
    assert unrolling.issues == ("every entity of the chain is masked: it adds only its relations",)
    assert unrolling.query_text().endswith("directed by. born in.")
    assert account.calls == 1 and (RECORD or vcr.play_count == 1)


@pytest.mark.vcr
def test_unrolling_reply_repeating_the_question(api_base: str, vcr: Cassette) -> None:
    unrolling, _ = unroll(api_base)
    assert unrolling.sub_questions == ()
    assert unrolling.issues == (
        "a sub-question repeated the question; dropped",
        "the last tail was not the answer slot; replaced",
        "the chain only restates the question",
    )


@pytest.mark.vcr
def test_pipeline_good_path(api_base: str, vcr: Cassette) -> None:
    dense = DenseRetriever.from_corpus(Corpus(polish_wedding_passages()), HashingEncoder())
    coop = CoopRetriever.with_llm(dense, client(api_base), top_k=3)
    result = coop.run(Query(POLISH_WEDDING_QUESTION, id="q1"), k=3)
    assert result.answer == "Philadelphia" and result.trace.reading is not None
    assert result.trace.reading.unsupported == ()
    account = result.trace.account
    assert account is not None and account.calls == 3
    assert RECORD or vcr.play_count == 3
    assert account.prompt_tokens == 3 * scripted_llm.PROMPT_TOKENS and account.cost == 0.0
