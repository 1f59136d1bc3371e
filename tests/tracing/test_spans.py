"""The span core: free when nobody listens, nesting across threads and asyncio tasks, sinks
that fail never break a query (issue 25, item 4)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rag_multihop import Corpus, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages
from rag_multihop.tracing import (
    NO_SPAN,
    Span,
    add_sink,
    current_span,
    remove_sink,
    set_attributes,
    sinks,
    span,
)
from rag_multihop.tracing import spans as spans_module

CORPUS = Corpus(polish_wedding_passages())
QUESTION = Query(POLISH_WEDDING_QUESTION)


class Recorder:
    """A sink that keeps every ended span; ``listens`` switches it on and off."""

    def __init__(self, listens: bool = True) -> None:
        self.listens = listens
        self.started: list[str] = []
        self.ended: list[Span] = []

    def listening(self) -> bool:
        return self.listens

    def start(self, span: Span) -> str:
        self.started.append(span.name)
        return span.name

    def end(self, span: Span, state: object) -> None:
        assert state == span.name
        self.ended.append(span)

    def named(self, name: str) -> list[Span]:
        return [s for s in self.ended if s.name == f"rag_multihop.{name}"]


@pytest.fixture(autouse=True)
def no_other_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty registry for each test (the integrations register theirs on import)."""
    monkeypatch.setattr(spans_module, "_sinks", ())


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    sink = add_sink(Recorder())
    yield sink
    remove_sink(sink)


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> list[Span]:
    """Every Span object the core creates during the test."""
    made: list[Span] = []

    class Counted(Span):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(spans_module, "Span", Counted)
    return made


def queries() -> None:
    """A multi-hop and a bridge query (every stage kind of both)."""
    encoder = HashingEncoder()
    MultiHopRetriever.from_corpus(CORPUS, encoder).run(QUESTION, k=3)
    BridgeRetriever.llm_free(DenseRetriever.from_corpus(CORPUS, encoder)).run(QUESTION, k=3)


def test_nobody_listening_creates_no_span(created: list[Span]) -> None:
    assert sinks() == ()
    queries()
    assert created == []
    assert span("a.b", k=1) is span("c.d")  # the one shared no-op context
    with span("a.b") as nothing:
        nothing.set(candidates=3)  # accepted and dropped
        set_attributes(candidates=4)
    assert nothing is NO_SPAN and current_span() is None


def test_a_sink_that_does_not_listen_creates_no_span(created: list[Span]) -> None:
    quiet = add_sink(Recorder(listens=False))
    try:
        queries()
    finally:
        remove_sink(quiet)
    assert created == [] and quiet.started == []


def test_a_listening_sink_gets_every_stage(created: list[Span], recorder: Recorder) -> None:
    queries()
    assert len(created) == len(recorder.ended) > 10
    assert recorder.named("multihop.run") and recorder.named("bridge.run")


def test_spans_nest_and_carry_prefixed_attributes(recorder: Recorder) -> None:
    with span("m.run", k=np.int64(3)) as outer:
        with span("m.stage", {"gen_ai.usage.input_tokens": 7}, ids=["a", "b"]) as inner:
            set_attributes(pool_size=np.float32(2.5))
            assert current_span() is inner
        outer.set(returned=2)
    [stage] = recorder.named("m.stage")
    [run] = recorder.named("m.run")
    assert stage.parent is run and run.parent is None
    assert stage.attributes == {
        "gen_ai.usage.input_tokens": 7,
        "rag_multihop.ids": ("a", "b"),
        "rag_multihop.pool_size": 2.5,
    }
    assert run.attributes == {"rag_multihop.k": 3, "rag_multihop.returned": 2}
    assert type(run.attributes["rag_multihop.k"]) is int
    assert run.seconds is not None and run.seconds >= stage.seconds >= 0  # type: ignore[operator]
    assert [s.name for s in recorder.ended] == ["rag_multihop.m.stage", "rag_multihop.m.run"]


def test_spans_nest_across_asyncio_tasks_and_worker_threads(recorder: Recorder) -> None:
    def in_thread(name: str) -> None:
        with span(f"m.{name}.thread"):
            pass

    async def stage(name: str) -> None:
        with span(f"m.{name}"):
            await asyncio.sleep(0.01)
            await asyncio.to_thread(in_thread, name)

    async def main() -> None:
        with span("m.run"):
            await asyncio.gather(stage("a"), stage("b"))

    asyncio.run(main())
    [run] = recorder.named("m.run")
    for name in ("a", "b"):
        [task] = recorder.named(f"m.{name}")
        [thread] = recorder.named(f"m.{name}.thread")
        assert task.parent is run and thread.parent is task


def test_the_error_of_a_failing_stage_is_on_its_span(recorder: Recorder) -> None:
    with pytest.raises(KeyError), span("m.run"):
        raise KeyError("missing")
    [run] = recorder.ended
    assert isinstance(run.error, KeyError) and current_span() is None


def test_a_broken_sink_is_logged_and_never_breaks_the_query(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def listening(self) -> bool:
            return True

        def start(self, span: Span) -> Any:
            raise RuntimeError("collector down")

        def end(self, span: Span, state: object) -> None:
            raise RuntimeError("collector down")

    broken = add_sink(Broken())
    try:
        with caplog.at_level(logging.ERROR, logger="rag_multihop.tracing.spans"):
            result = MultiHopRetriever.from_corpus(CORPUS, HashingEncoder()).run(QUESTION, k=3)
    finally:
        remove_sink(broken)
    assert len(result.candidates) == 3
    assert "failed to start rag_multihop.multihop.run" in caplog.text
    assert recorder.named("multihop.run")  # the other sink still got every span


def test_sinks_are_registered_once_and_checked() -> None:
    sink = Recorder()
    assert add_sink(sink) is add_sink(sink)
    assert sinks() == (sink,)
    remove_sink(sink)
    remove_sink(sink)  # removing again is harmless
    assert sinks() == ()
    with pytest.raises(TypeError, match="sink must have listening.*got str"):
        add_sink("otlp://collector")  # type: ignore[arg-type]
