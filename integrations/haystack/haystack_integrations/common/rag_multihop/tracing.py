"""rag-multihop's stage spans in Haystack's tracer.

Every stage of every rag-multihop method (hop 1, expansion, judge, PPR, fusion, each LLM
call, ...; see ``docs/tracing.md``) becomes a span of ``haystack.tracing.tracer`` with its
counts as tags, nested in the span of the component that ran it. So whatever tracer you
enabled (``haystack.tracing.enable_tracing``, the Langfuse or OpenTelemetry tracers of
haystack-core-integrations, Haystack's auto-detected OpenTelemetry tracer) records them with
the pipeline's own spans.

Importing the package registers the forwarding :data:`SINK` once
(:func:`rag_multihop.tracing.add_sink`); it forwards only while Haystack tracing is enabled,
so it costs nothing otherwise. :func:`uninstrument` removes it, :func:`instrument` adds it
back. If you also enable rag-multihop's own OpenTelemetry sink while Haystack traces to
OpenTelemetry, each stage is recorded twice: use one of them.

Example (Haystack's logging tracer):
    >>> from haystack import tracing
    >>> from haystack.tracing.logging_tracer import LoggingTracer
    >>> from rag_multihop.tracing import span
    >>> tracing.enable_tracing(LoggingTracer())
    >>> with span("demo.stage", candidates=3):
    ...     pass
    >>> tracing.disable_tracing()
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass

from haystack import tracing
from haystack.tracing import Span as HaystackSpan

from rag_multihop.tracing import Span, add_sink, remove_sink

_parent: ContextVar[HaystackSpan | None] = ContextVar("rag_multihop_haystack_span", default=None)


@dataclass
class _Open:
    manager: AbstractContextManager[HaystackSpan]
    span: HaystackSpan
    token: Token[HaystackSpan | None]


class HaystackSink:
    """Forwards stage spans to ``haystack.tracing.tracer`` (``trace(name, tags=...,
    parent_span=...)``): the parent is the enclosing stage's span, else the tracer's current
    span (the running component's); the tags at the end are the stage's attributes."""

    def listening(self) -> bool:
        return tracing.is_tracing_enabled()

    def start(self, span: Span) -> _Open:
        parent = _parent.get()
        if parent is None:
            parent = tracing.tracer.current_span()
        manager = tracing.tracer.trace(span.name, tags=dict(span.attributes), parent_span=parent)
        opened = manager.__enter__()
        return _Open(manager, opened, _parent.set(opened))

    def end(self, span: Span, state: object) -> None:
        assert isinstance(state, _Open)
        try:
            state.span.set_tags(dict(span.attributes))
            error = span.error
            if error is None:
                state.manager.__exit__(None, None, None)
            else:
                state.span.set_tag("error.type", type(error).__name__)
                state.manager.__exit__(type(error), error, error.__traceback__)
        finally:
            try:
                _parent.reset(state.token)
            except ValueError:  # ended in another context than it started in
                _parent.set(None)


SINK = HaystackSink()
"""The sink this package registers on import."""


def instrument() -> HaystackSink:
    """Send rag-multihop's stage spans to Haystack's tracer (done on import)."""
    return add_sink(SINK)


def uninstrument() -> None:
    """Stop sending them (:func:`instrument` starts again)."""
    remove_sink(SINK)


instrument()
