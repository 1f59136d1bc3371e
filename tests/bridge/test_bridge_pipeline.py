"""BridgeRetriever and BridgeReranker, LLM-free: end to end, sync = async, degenerate input."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge import (
    BRIDGE_SCORE,
    BridgeRetriever,
    BridgeSettings,
    EmbeddingJudge,
    PassageVectors,
)
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.bridge.search import RetrieverSearcher, as_searcher
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.testing import POLISH_WEDDING_QUESTION, polish_wedding_passages
from rag_multihop.types import Candidate

PASSAGES = [
    *polish_wedding_passages(),
    Passage(
        "hitchcock", "Alfred Hitchcock was an English film director.", title="Alfred Hitchcock"
    ),
    Passage("wedding", "A wedding is a ceremony where two people are married.", title="Wedding"),
    Passage("poland", "Poland is a country in Central Europe.", title="Poland"),
]
QUESTION = Query(POLISH_WEDDING_QUESTION, id="q1")


@pytest.fixture
def dense(hashing_encoder) -> DenseRetriever:
    return DenseRetriever.from_corpus(Corpus(PASSAGES), hashing_encoder)


class CountingJudge:
    """Scores by a fixed table (0.5 for unknown ids) and counts its calls."""

    def __init__(self, table: dict[str, float] | None = None) -> None:
        self.table = table or {}
        self.calls: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def score(
        self, query: Query, bridge: Passage, entities: Sequence[str], candidates: Sequence[Passage]
    ) -> list[float]:
        self.calls.append((bridge.id, tuple(entities), tuple(c.id for c in candidates)))
        return [self.table.get(c.id, 0.5) for c in candidates]

    async def ascore(
        self, query: Query, bridge: Passage, entities: Sequence[str], candidates: Sequence[Passage]
    ) -> list[float]:
        return self.score(query, bridge, entities, candidates)


def test_llm_free_pipeline_finds_the_second_hop(dense: DenseRetriever) -> None:
    result = BridgeRetriever.llm_free(dense).run(QUESTION, k=4)
    ids = [c.id for c in result.candidates]
    assert ids[:2] == ["polish-wedding", "theresa-connelly"]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    assert result.candidates[0].score == BRIDGE_SCORE
    second = result.candidates[1].signals
    assert {"judge", "judge_cal", "retrieval", "retrieval_cal", "fused", "pool_rank"} <= set(second)
    trace = result.trace
    assert trace.query_id == "q1" and trace.bridge_id == "polish-wedding"
    assert "theresa connelly" in trace.entities and trace.judge == "embedding"
    assert trace.account is None and trace.fallbacks == 0 and trace.seconds > 0
    assert "polish-wedding" not in trace.pool_ids and "theresa-connelly" in trace.pool_ids
    assert trace.to_dict()["bridge_id"] == "polish-wedding"


def test_sync_and_async_agree_and_inputs_are_untouched(dense: DenseRetriever) -> None:
    bridge = BridgeRetriever.llm_free(dense)
    query = Query(QUESTION.text, id="q1", embedding=dense.query_vector(QUESTION)[0])
    before = query.embedding.copy()
    sync = bridge.run(query, k=6)
    async_ = asyncio.run(bridge.arun(query, k=6))
    assert [(c.id, c.score) for c in sync.candidates] == [
        (c.id, c.score) for c in async_.candidates
    ]
    assert [c.id for c in bridge.retrieve(query, k=3)] == [c.id for c in sync.candidates[:3]]
    assert [c.id for c in asyncio.run(bridge.aretrieve(query, k=3))] == [
        c.id for c in sync.candidates[:3]
    ]
    np.testing.assert_array_equal(query.embedding, before)
    assert isinstance(bridge, Retriever)


def test_judged_position_lets_the_judge_rank_the_bridge(dense: DenseRetriever) -> None:
    judge = CountingJudge({"polish-wedding": 0.0, "theresa-connelly": 1.0})
    settings = BridgeSettings(bridge_position="judged", alpha=0.0)
    result = BridgeRetriever(dense, judge=judge, settings=settings).run(QUESTION, k=8)
    assert result.candidates[0].id == "theresa-connelly"
    assert "polish-wedding" in judge.calls[0][2]  # the bridge was judged
    assert result.candidates[0].score <= 1.0  # no bridge tier in this mode


def test_backfill_fills_k_from_hop1_when_the_pool_is_small(dense: DenseRetriever) -> None:
    settings = BridgeSettings(pool_cap=1)
    result = BridgeRetriever(dense, judge=CountingJudge(), settings=settings).run(QUESTION, k=5)
    assert len(result.candidates) == 5
    assert [c.signals.get("backfill") for c in result.candidates[2:]] == [1.0, 1.0, 1.0]
    assert all(c.score == 0.0 for c in result.candidates[2:])


def test_empty_pool_skips_the_judge_and_returns_hop1(hashing_encoder) -> None:
    corpus = Corpus([Passage("only", "The only passage.", title="Only")])
    judge = CountingJudge()
    result = BridgeRetriever(DenseRetriever.from_corpus(corpus, hashing_encoder), judge=judge).run(
        Query("anything?"), k=3
    )
    assert [c.id for c in result.candidates] == ["only"]
    assert judge.calls == [] and result.trace.pool_ids == ()


def test_plan_with_nothing_to_search_gives_an_empty_pool(dense: DenseRetriever) -> None:
    class Nothing:
        def plan(self, query, bridge):
            from rag_multihop.bridge.queries import HopPlan

            return HopPlan(entities=(), queries=())

        async def aplan(self, query, bridge):
            return self.plan(query, bridge)

    judge = CountingJudge()
    result = BridgeRetriever(dense, judge=judge, writer=Nothing()).run(QUESTION, k=3)
    assert judge.calls == [] and len(result.candidates) == 3
    assert result.candidates[0].id == "polish-wedding"


def test_bridge_without_entities_still_searches_the_queries(hashing_encoder) -> None:
    corpus = Corpus(
        [
            Passage("a", "the river flows to the sea without names."),
            Passage("b", "the sea is salty and wide."),
            Passage("c", "rivers carry water."),
        ]
    )
    judge = CountingJudge()
    pipeline = BridgeRetriever(DenseRetriever.from_corpus(corpus, hashing_encoder), judge=judge)
    result = pipeline.run(Query("where does the river flow?"), k=3)
    assert result.trace.entities == () and result.trace.queries
    assert judge.calls and judge.calls[0][1] == ()
    assert len(result.candidates) == 3


def test_hop1_with_no_result_returns_nothing() -> None:
    class Empty:
        def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
            return []

    result = BridgeRetriever(Empty(), judge=CountingJudge()).run(QUESTION, k=3)
    assert result.candidates == [] and result.trace.bridge_id is None


def test_judge_out_of_range_is_a_clear_error(dense: DenseRetriever) -> None:
    judge = CountingJudge({"theresa-connelly": 1.7})
    with pytest.raises(ValueError, match="judge CountingJudge returned scores outside \\[0, 1\\]"):
        BridgeRetriever(dense, judge=judge).run(QUESTION, k=3)


def test_bad_arguments_are_rejected(dense: DenseRetriever) -> None:
    bridge = BridgeRetriever.llm_free(dense)
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        bridge.run(QUESTION, k=0)
    with pytest.raises(TypeError, match="judge must implement score and ascore"):
        BridgeRetriever(dense, judge=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="base must be a Searcher"):
        BridgeRetriever(object(), judge=CountingJudge())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bridge_position must be one of"):
        BridgeSettings(bridge_position="last")
    with pytest.raises(ValueError, match="pool_cap must be a positive integer"):
        BridgeSettings(pool_cap=0)
    with pytest.raises(ValueError, match="needs passage vectors"):
        BridgeRetriever.llm_free(DenseRetriever(dense.corpus, dense.index))


def test_searchers_batch_and_adapt(dense: DenseRetriever, hashing_encoder) -> None:
    batched = as_searcher(dense)
    assert batched is dense  # a DenseRetriever is a batched Searcher itself
    assert isinstance(as_searcher(RetrieverSearcher(dense)), RetrieverSearcher)
    queries = [Query("Theresa Connelly"), Query("Alfred Hitchcock")]
    calls_before = hashing_encoder.calls
    found = batched.search(queries, 2)
    assert hashing_encoder.calls == calls_before + 1  # one encoder call for the batch
    assert [hits[0].id for hits in found] == ["theresa-connelly", "hitchcock"]
    assert [[c.id for c in h] for h in RetrieverSearcher(dense).search(queries, 2)] == [
        [c.id for c in h] for h in found
    ]
    assert asyncio.run(batched.asearch(queries, 2))[1][0].id == "hitchcock"
    no_encoder = dense.with_encoder(None)
    with pytest.raises(ValueError, match="have no embedding and no encoder was given"):
        no_encoder.search(queries, 2)
    assert no_encoder.search([], 2) == []


def test_reranker_judges_against_the_top_candidate(hashing_encoder) -> None:
    found = [
        Candidate(PASSAGES[0], 0.9),
        Candidate(PASSAGES[6], 0.8),
        Candidate(PASSAGES[1], 0.7),
        Candidate(PASSAGES[3], 0.6),
    ]
    reranker = BridgeReranker(EmbeddingJudge(PassageVectors(hashing_encoder)))
    ranked = reranker.rerank(QUESTION, found, top_n=3)
    assert [c.id for c in ranked][:2] == ["polish-wedding", "theresa-connelly"]
    assert len(ranked) == 3 and ranked[2].id != "wedding"  # "Wedding" is only part of the title
    assert ranked[1].signals["retrieval"] == 0.7
    async_ranked = asyncio.run(reranker.arerank(QUESTION, found, top_n=3))
    assert [c.id for c in async_ranked] == [c.id for c in ranked]
    assert reranker.rerank(QUESTION, []) == []
    assert [c.id for c in reranker.rerank(QUESTION, found[:1])] == ["polish-wedding"]
    with pytest.raises(ValueError, match=r"unique passage ids; duplicated: \['polish-wedding'\]"):
        reranker.rerank(QUESTION, [found[0], found[0]])
    with pytest.raises(ValueError, match="top_n must be a positive integer"):
        reranker.rerank(QUESTION, found, top_n=0)


def test_the_llm_free_bridge_imports_no_llm_or_framework_library() -> None:
    import subprocess
    import sys

    heavy = ("pydantic", "litellm", "torch", "llama_index", "haystack", "sentence_transformers")
    code = (
        "import sys, rag_multihop.bridge, rag_multihop.eval.methods.bridge\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
