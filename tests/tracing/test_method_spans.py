"""Every method's stages as OpenTelemetry spans, read back with the SDK's in-memory exporter:
names, nesting, and counts that match what the method did (issue 25, item 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_multihop import Corpus, Query
from rag_multihop.association import AssociationReranker, AssociationRetriever, TrainingConfig
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.coop import (
    CoopRetriever,
    HiddenStateEncoder,
    RaLaReranker,
    RaLaRetriever,
    SimilarityKeyExtractor,
)
from rag_multihop.fusion import FusionRetriever
from rag_multihop.graph import GraphRetriever, build_entity_graph
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMSettings
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.testing import (
    POLISH_WEDDING_QUESTION,
    FakeTransport,
    HashingEncoder,
    polish_wedding_passages,
    polish_wedding_replies,
)
from rag_multihop.tracing import enable_opentelemetry, remove_sink

CORPUS = Corpus(polish_wedding_passages())
QUESTION = Query(POLISH_WEDDING_QUESTION, id="q1")
ENCODER = HashingEncoder()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans of the test, exported in memory by a provider of its own."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = enable_opentelemetry(provider)
    yield exporter
    remove_sink(sink)
    provider.shutdown()


def dense() -> DenseRetriever:
    return DenseRetriever.from_corpus(CORPUS, ENCODER)


def llm(**overrides: Any) -> tuple[LLMClient, FakeTransport]:
    fake = FakeTransport(
        polish_wedding_replies(**overrides),
        default='{"answer": "Philadelphia"}',
        model="fake-model",
        prompt_tokens=40,
        completion_tokens=5,
    )
    return LLMClient(LLMSettings("openai/fake-model", max_retries=0), transport=fake), fake


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for item in exporter.get_finished_spans():
        found.setdefault(item.name, []).append(item)
    return found


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    [found] = by_name(exporter)[f"rag_multihop.{name}"]
    return found


def attr(item: ReadableSpan, key: str) -> Any:
    assert item.attributes is not None
    full = key if key.startswith(("gen_ai.", "error.")) else f"rag_multihop.{key}"
    return item.attributes[full]


def assert_children(exporter: InMemorySpanExporter, parent: str, children: Sequence[str]) -> None:
    """Each child span named is a direct child of the one ``parent`` span, in one trace."""
    root = one(exporter, parent)
    assert root.context is not None
    for name in children:
        for child in by_name(exporter)[f"rag_multihop.{name}"]:
            assert child.parent is not None, name
            assert child.parent.span_id == root.context.span_id, name
            assert child.context is not None and child.context.trace_id == root.context.trace_id


def llm_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return by_name(exporter).get("rag_multihop.llm.chat", [])


# ---------------------------------------------------------------- LLM-free methods


def test_multihop_stages_count_the_pool_and_the_graph_walk(spans: InMemorySpanExporter) -> None:
    retriever = MultiHopRetriever.from_corpus(CORPUS, ENCODER)
    result = retriever.run(QUESTION, k=4)
    assert_children(
        spans, "multihop.run", ["multihop.first_stage", "multihop.pair", "multihop.fill"]
    )
    assert_children(spans, "multihop.run", ["multihop.graph_tail"])
    run = one(spans, "multihop.run")
    assert attr(run, "k") == 4 and attr(run, "returned") == len(result.candidates)
    assert attr(run, "pool_size") == result.trace.candidates
    first = one(spans, "multihop.first_stage")
    assert attr(first, "candidates") == min(retriever.settings.candidates, len(CORPUS))
    assert attr(first, "named") >= 1  # the question names "Polish Wedding"
    pair = one(spans, "multihop.pair")
    assert attr(pair, "pair_score") == pytest.approx(result.trace.pair_score)
    ppr = one(spans, "graph.ppr")
    assert ppr.parent is not None
    assert ppr.parent.span_id == one(spans, "multihop.graph_tail").context.span_id  # type: ignore[union-attr]
    assert attr(ppr, "seeds") >= 1 and attr(ppr, "algorithm") == retriever.settings.ppr == "push"
    assert attr(ppr, "ppr_pushes") >= attr(ppr, "seeds")


def test_pit_graph_fusion_spans_each_system_the_fusion_and_the_push(
    spans: InMemorySpanExporter,
) -> None:
    graph = GraphRetriever(build_entity_graph(CORPUS), CORPUS, seed_retriever=dense(), ppr="push")
    fusion = FusionRetriever(
        {"dense": dense(), "graph": graph, "bm25": BM25Retriever(CORPUS)},
        pool_cap={"graph": 2},
        child_k=5,
    )
    fused = fusion.retrieve(QUESTION, k=3)
    assert_children(spans, "fusion.run", ["fusion.search", "fusion.fuse"])
    searches = {attr(s, "system"): s for s in by_name(spans)["rag_multihop.fusion.search"]}
    assert sorted(searches) == ["bm25", "dense", "graph"]
    assert attr(searches["dense"], "candidates") == len(CORPUS)  # child_k 5 of 5 passages
    fuse = one(spans, "fusion.fuse")
    assert attr(fuse, "calibration") == "pit" and attr(fuse, "fusion") == "boltzmann"
    assert attr(fuse, "pool_caps") == (-1, 2, -1)
    assert attr(fuse, "pool_size") >= len(fused) == 3
    ppr = one(spans, "graph.ppr")
    assert attr(ppr, "algorithm") == "push" and attr(ppr, "ppr_pushes") >= attr(ppr, "seeds") > 0
    assert attr(ppr, "ppr_edges_visited") > 0
    assert attr(one(spans, "fusion.run"), "returned") == 3


def test_aar_spans_the_dense_top_k_association_and_blend(spans: InMemorySpanExporter) -> None:
    vectors = ENCODER.encode(CORPUS.texts())
    reranker = AssociationReranker(
        encoder=ENCODER, training=TrainingConfig(epochs=2, batch_size=2, seed=0)
    ).fit(CORPUS.ids, vectors, [("polish-wedding", "theresa-connelly")])
    retriever = AssociationRetriever(dense(), reranker, candidates=4)
    found = retriever.retrieve(QUESTION, k=2)
    assert_children(spans, "aar.run", ["aar.first_stage", "aar.rerank"])
    assert_children(spans, "aar.rerank", ["aar.association", "aar.blend"])
    assert attr(one(spans, "aar.first_stage"), "candidates") == 4
    assert attr(one(spans, "aar.association"), "candidates") == 4
    assert attr(one(spans, "aar.rerank"), "returned") == len(found) == 2


def test_rala_spans_states_and_scoring(spans: InMemorySpanExporter, minilm) -> None:
    rala = RaLaRetriever(dense(), RaLaReranker(HiddenStateEncoder(minilm)), candidates=3)
    found = rala.retrieve(QUESTION, k=2)
    assert_children(spans, "rala.run", ["rala.first_stage", "rala.rerank"])
    assert_children(spans, "rala.rerank", ["rala.states", "rala.score"])
    assert attr(one(spans, "rala.first_stage"), "candidates") == 3
    assert attr(one(spans, "rala.states"), "encoded_at_query_time") == 3  # no store
    assert attr(one(spans, "rala.score"), "scoring") == rala.reranker.settings.scoring
    assert attr(one(spans, "rala.run"), "returned") == len(found) == 2


def test_bridge_llm_free_spans_hop1_plan_expansion_judge_fuse(
    spans: InMemorySpanExporter,
) -> None:
    result = BridgeRetriever.llm_free(dense()).run(QUESTION, k=3)
    assert_children(
        spans,
        "bridge.run",
        ["bridge.hop1", "bridge.plan", "bridge.expansion", "bridge.judge", "bridge.fuse"],
    )
    assert attr(one(spans, "bridge.hop1"), "candidates") == 3
    plan = one(spans, "bridge.plan")
    assert attr(plan, "entities") == len(result.trace.entities)
    assert attr(plan, "queries") == len(result.trace.queries)
    expansion = one(spans, "bridge.expansion")
    assert attr(expansion, "searches") == len(result.trace.entities) + len(result.trace.queries)
    run = one(spans, "bridge.run")
    assert attr(run, "pool_size") == len(result.trace.pool_ids)
    assert attr(run, "judge") == "embedding" and attr(run, "returned") == 3
    assert "rag_multihop.llm_calls" not in (run.attributes or {})
    assert llm_spans(spans) == []


@pytest.mark.parametrize("way", ["sync", "async"])
def test_bridge_with_an_llm_nests_each_call_with_its_tokens(
    spans: InMemorySpanExporter, way: str
) -> None:
    client, fake = llm()
    bridge = BridgeRetriever.with_llm(dense(), client)
    # sync: the client runs the judge's calls on its own event loop thread
    result = bridge.run(QUESTION, k=3) if way == "sync" else asyncio.run(bridge.arun(QUESTION, k=3))
    calls = llm_spans(spans)
    assert len(calls) == len(fake.requests) == result.trace.account.calls  # type: ignore[union-attr]
    plan, judge = one(spans, "bridge.plan"), one(spans, "bridge.judge")
    parents = {c.parent.span_id for c in calls}  # type: ignore[union-attr]
    assert parents == {plan.context.span_id, judge.context.span_id}  # type: ignore[union-attr]
    assert sum(c.parent.span_id == judge.context.span_id for c in calls) == len(  # type: ignore[union-attr]
        result.trace.pool_ids
    )
    call = calls[0]
    assert attr(call, "gen_ai.operation.name") == "chat"
    assert attr(call, "gen_ai.request.model") == "openai/fake-model"
    assert attr(call, "gen_ai.provider.name") == "openai"
    assert attr(call, "gen_ai.response.model") == "fake-model"
    assert attr(call, "gen_ai.usage.input_tokens") == 40
    assert attr(call, "gen_ai.usage.output_tokens") == 5
    assert attr(call, "llm.cached") is False and attr(call, "llm.retries") == 0
    run = one(spans, "bridge.run")
    assert attr(run, "llm_calls") == len(calls)
    assert attr(run, "llm_tokens") == 45 * len(calls)


def test_coop_spans_unroll_retrieve_rerank_keyextract_read(spans: InMemorySpanExporter) -> None:
    client, fake = llm(
        key='{"answerable": false, "key_sentence": "Polish Wedding is a 1998 '
        'film written and directed by Theresa Connelly."}'
    )
    coop = CoopRetriever.with_llm(dense(), client, keyextract=True, candidates=4, top_k=2)
    result = coop.run(QUESTION, k=3)
    assert_children(
        spans, "coop.run", ["coop.unroll", "coop.retrieve", "coop.keyextract", "coop.read"]
    )
    unroll = one(spans, "coop.unroll")
    assert attr(unroll, "sub_questions") == 2 and attr(unroll, "llm_calls") == 1
    rounds = by_name(spans)["rag_multihop.coop.keyextract"]
    assert [attr(r, "round") for r in rounds] == list(range(1, len(result.trace.rounds) + 1))
    assert len(rounds) == 2  # the sentence extends the search once, then is no longer new
    assert [attr(r, "answerable") for r in rounds] == [False, False]
    assert [attr(r, "sentence_found") for r in rounds] == [True, True]
    retrieves = by_name(spans)["rag_multihop.coop.retrieve"]
    assert len(retrieves) == len(result.trace.search_texts)
    assert all(attr(r, "candidates") == 4 for r in retrieves)
    read = one(spans, "coop.read")
    assert attr(read, "answered") is True and attr(read, "passages") == 2
    run = one(spans, "coop.run")
    assert attr(run, "keyextract_rounds") == 2
    assert attr(run, "keyextract_stop") == result.trace.stop == "no new sentence"
    calls = llm_spans(spans)
    assert attr(run, "llm_calls") == len(calls) == len(fake.requests)
    owners = {c.parent.span_id for c in calls}  # type: ignore[union-attr]
    expected = {unroll.context.span_id, read.context.span_id}  # type: ignore[union-attr]
    expected |= {r.context.span_id for r in rounds}  # type: ignore[union-attr]
    assert owners == expected


def test_coop_with_rala_and_llm_free_keyextract_nests_the_reranker(
    spans: InMemorySpanExporter, minilm
) -> None:
    coop = CoopRetriever(
        dense(),
        reranker=RaLaReranker(HiddenStateEncoder(minilm)),
        key_extractor=SimilarityKeyExtractor(ENCODER),
        keyextract_rounds=1,
        candidates=3,
    )
    asyncio.run(coop.arun(QUESTION, k=2))
    reranks = by_name(spans)["rag_multihop.coop.rerank"]
    assert len(reranks) == 2  # the first search and the KeyExtract round's
    states = by_name(spans)["rag_multihop.rala.states"]
    assert {s.parent.span_id for s in states} == {r.context.span_id for r in reranks}  # type: ignore[union-attr]
    assert attr(one(spans, "coop.keyextract"), "sentence_found") is True
    assert attr(one(spans, "coop.unroll"), "llm") is False
    assert llm_spans(spans) == []


def test_a_failing_stage_ends_its_span_with_the_error(spans: InMemorySpanExporter) -> None:
    class Broken:
        def retrieve(self, query: Query, k: int = 10) -> list:
            raise RuntimeError("index offline")

    fusion = FusionRetriever({"dense": dense(), "broken": Broken()})
    with pytest.raises(RuntimeError, match="index offline"):
        fusion.retrieve(QUESTION, k=2)
    failed = [s for s in by_name(spans)["rag_multihop.fusion.search"] if not s.status.is_ok]
    assert [attr(s, "system") for s in failed] == ["broken"]
    assert attr(failed[0], "error.type") == "RuntimeError"
    assert not one(spans, "fusion.run").status.is_ok
