"""rag-multihop's stage spans in LlamaIndex's instrumentation: a span handler on the root
dispatcher sees every stage nested in the LlamaIndex call that ran it (and LlamaIndex's own
calls made inside a stage nested in the stage), with the counts on a stage-end event."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.retrievers.rag_multihop import BridgeRetriever, MultiHopRetriever
from llama_index.retrievers.rag_multihop.tracing import SINK, StageEndEvent

from rag_multihop.testing import POLISH_WEDDING_QUESTION, polish_wedding_passages
from rag_multihop.tracing import sinks

QUESTION = POLISH_WEDDING_QUESTION


class Events(BaseEventHandler):
    """Keeps every event."""

    seen: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Events"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.seen.append(event)


@pytest.fixture
def handlers() -> Iterator[tuple[SimpleSpanHandler, Events]]:
    root = get_dispatcher()
    spans, events = SimpleSpanHandler(), Events()
    root.add_span_handler(spans)
    root.add_event_handler(events)
    yield spans, events
    root.span_handlers.remove(spans)
    root.event_handlers.remove(events)


def nodes() -> list[TextNode]:
    return [
        TextNode(id_=p.id, text=p.text, metadata={"title": p.title})
        for p in polish_wedding_passages()
    ]


def name(item: SimpleSpan) -> str:
    return item.id_.partition("-")[0]


def named(spans: SimpleSpanHandler, wanted: str) -> list[SimpleSpan]:
    return [s for s in spans.completed_spans if name(s) == wanted]


def parent_of(spans: SimpleSpanHandler, item: SimpleSpan) -> str:
    [parent] = [s for s in spans.completed_spans if s.id_ == item.parent_id]
    return name(parent)


def test_the_package_registers_its_sink_once() -> None:
    assert sinks().count(SINK) == 1


def test_multihop_stages_nest_in_the_retrievers_span(handlers) -> None:
    spans, events = handlers
    retriever = MultiHopRetriever(nodes(), similarity_top_k=3, embed_model=HashingEmbedding())
    found = retriever.retrieve(QUESTION)
    [run] = named(spans, "rag_multihop.multihop.run")
    assert parent_of(spans, run) == "MultiHopRetriever._retrieve"
    for stage in ("first_stage", "pair", "fill", "graph_tail"):
        [item] = named(spans, f"rag_multihop.multihop.{stage}")
        assert item.parent_id == run.id_
    [ppr] = named(spans, "rag_multihop.graph.ppr")
    assert parent_of(spans, ppr) == "rag_multihop.multihop.graph_tail"
    ends = {e.name: e for e in events.seen if isinstance(e, StageEndEvent)}
    end = ends["rag_multihop.multihop.run"]
    assert end.span_id == run.id_ and end.seconds > 0 and end.error is None
    assert end.attributes["rag_multihop.returned"] == len(found) == 3
    assert run.tags["rag_multihop.k"] == 3  # the attributes at the start


def test_llamaindex_calls_inside_a_stage_nest_in_the_stage(handlers) -> None:
    spans, _ = handlers
    base = VectorStoreIndex(nodes(), embed_model=HashingEmbedding()).as_retriever(
        similarity_top_k=5
    )
    bridge = BridgeRetriever(base, similarity_top_k=3, embed_model=HashingEmbedding())
    asyncio.run(bridge.aretrieve(QueryBundle(QUESTION)))
    [run] = named(spans, "rag_multihop.bridge.run")
    assert parent_of(spans, run).startswith("BridgeRetriever.")  # the LlamaIndex call
    [hop1] = named(spans, "rag_multihop.bridge.hop1")
    inner = [s for s in spans.completed_spans if s.parent_id == hop1.id_]
    assert inner and all(not name(s).startswith("rag_multihop.") for s in inner)
    stages = [
        s
        for s in spans.completed_spans
        if name(s).startswith("rag_multihop.bridge.") and s is not run
    ]
    assert {name(s) for s in stages} == {
        f"rag_multihop.bridge.{stage}" for stage in ("hop1", "plan", "expansion", "judge", "fuse")
    }
    assert {s.parent_id for s in stages} == {run.id_}


def test_the_sink_listens_only_while_a_handler_is_attached(handlers) -> None:
    assert SINK.listening()
    root = get_dispatcher()
    spans, events = handlers
    root.span_handlers.remove(spans)
    root.event_handlers.remove(events)
    try:
        assert not SINK.listening()  # LlamaIndex's null handlers do not count
    finally:
        root.add_span_handler(spans)
        root.add_event_handler(events)
