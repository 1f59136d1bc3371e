"""rag-multihop's stage spans in Haystack's tracer: with tracing enabled, every stage is a span
nested in the span of the component that ran it, with the stage's counts as tags."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline, tracing
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.tracing import Span, Tracer
from haystack_integrations.common.rag_multihop.tracing import SINK
from haystack_integrations.components.retrievers.rag_multihop import MultiHopRetriever
from hs_fakes import HashingTextEmbedder

from rag_multihop.testing import POLISH_WEDDING_QUESTION, hashing_vectors, polish_wedding_passages
from rag_multihop.tracing import sinks, span

QUESTION = POLISH_WEDDING_QUESTION


class Recorded(Span):
    def __init__(self, name: str, tags: dict[str, Any], parent: Recorded | None) -> None:
        self.name, self.tags, self.parent = name, dict(tags), parent
        self.error: str | None = None

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value


class RecordingTracer(Tracer):
    """Keeps every finished span with its tags and parent."""

    def __init__(self) -> None:
        self.finished: list[Recorded] = []
        self._current: ContextVar[Recorded | None] = ContextVar("recorded", default=None)

    @contextlib.contextmanager
    def trace(
        self,
        operation_name: str,
        tags: dict[str, Any] | None = None,
        parent_span: Span | None = None,
    ) -> Iterator[Span]:
        assert parent_span is None or isinstance(parent_span, Recorded)
        span = Recorded(operation_name, tags or {}, parent_span)
        token = self._current.set(span)
        try:
            yield span
        except Exception as exc:
            span.error = type(exc).__name__
            raise
        finally:
            self._current.reset(token)
            self.finished.append(span)

    def current_span(self) -> Span | None:
        return self._current.get()

    def named(self, name: str) -> list[Recorded]:
        return [s for s in self.finished if s.name == name]


@pytest.fixture
def tracer() -> Iterator[RecordingTracer]:
    recording = RecordingTracer()
    tracing.enable_tracing(recording)
    yield recording
    tracing.disable_tracing()


def store() -> InMemoryDocumentStore:
    passages = polish_wedding_passages()
    vectors = hashing_vectors([f"{p.title}\n{p.text}" for p in passages])
    documents = [
        Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=v.tolist())
        for p, v in zip(passages, vectors, strict=True)
    ]
    out = InMemoryDocumentStore()
    out.write_documents(documents)
    return out


def test_the_package_registers_its_sink_once() -> None:
    assert sinks().count(SINK) == 1


def test_stages_nest_in_the_components_span_with_their_counts(tracer: RecordingTracer) -> None:
    pipeline = Pipeline()
    pipeline.add_component("embedder", HashingTextEmbedder())
    pipeline.add_component("multihop", MultiHopRetriever(store(), top_k=3))
    pipeline.connect("embedder.embedding", "multihop.query_embedding")
    out = pipeline.run({"embedder": {"text": QUESTION}, "multihop": {"query": QUESTION}})
    [run] = tracer.named("rag_multihop.multihop.run")
    assert run.parent is not None and run.parent.name == "haystack.component.run"
    assert run.parent.tags["haystack.component.name"] == "multihop"
    assert run.tags["rag_multihop.k"] == 3
    assert run.tags["rag_multihop.returned"] == len(out["multihop"]["documents"]) == 3
    for stage in ("first_stage", "pair", "fill", "graph_tail"):
        [item] = tracer.named(f"rag_multihop.multihop.{stage}")
        assert item.parent is run
    [ppr] = tracer.named("rag_multihop.graph.ppr")
    assert ppr.parent is not None and ppr.parent.name == "rag_multihop.multihop.graph_tail"
    assert ppr.tags["rag_multihop.seeds"] >= 1


def test_a_failing_stage_reaches_the_tracer_as_an_error(tracer: RecordingTracer) -> None:
    with pytest.raises(KeyError), span("demo.run"), span("demo.stage", candidates=2):
        raise KeyError("missing")
    [stage] = tracer.named("rag_multihop.demo.stage")
    assert stage.error == "KeyError" and stage.tags["error.type"] == "KeyError"
    assert stage.tags["rag_multihop.candidates"] == 2
    assert stage.parent is tracer.named("rag_multihop.demo.run")[0]


def test_the_sink_listens_only_while_haystack_traces() -> None:
    assert not SINK.listening()
    tracing.enable_tracing(RecordingTracer())
    try:
        assert SINK.listening()
    finally:
        tracing.disable_tracing()
