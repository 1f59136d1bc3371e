"""Tracing: a span for each stage of each method, sent to the sinks that listen.

- :func:`span`, :func:`set_attributes`, :func:`current_span`: what the methods call
  (:mod:`rag_multihop.tracing.spans`); free when no sink listens; :func:`record_span` for
  work that ends in another context than it started in (a stream);
- :func:`add_sink` / :func:`remove_sink`: register a receiver (:class:`SpanSink`);
- :func:`enable_opentelemetry`: the OpenTelemetry sink (:mod:`rag_multihop.tracing.otel`,
  needs ``pip install 'rag-multihop[otel]'``); the LlamaIndex and Haystack integrations bring
  their own sinks (the instrumentation dispatcher, Haystack's tracer).

See ``docs/tracing.md`` for every span name and attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rag_multihop.tracing.spans import (
    NO_SPAN,
    PREFIX,
    AttributeValue,
    NoSpan,
    Span,
    SpanSink,
    add_sink,
    current_span,
    record_span,
    remove_sink,
    set_attributes,
    sinks,
    span,
)

if TYPE_CHECKING:
    from rag_multihop.tracing.otel import OpenTelemetrySink

__all__ = [
    "NO_SPAN",
    "PREFIX",
    "AttributeValue",
    "NoSpan",
    "OpenTelemetrySink",
    "Span",
    "SpanSink",
    "add_sink",
    "current_span",
    "enable_opentelemetry",
    "record_span",
    "remove_sink",
    "set_attributes",
    "sinks",
    "span",
]


def enable_opentelemetry(tracer_provider: Any = None) -> OpenTelemetrySink:
    """Register the OpenTelemetry sink and return it (``tracer_provider=None``: the global one;
    see :mod:`rag_multihop.tracing.otel`)."""
    from rag_multihop.tracing.otel import enable_opentelemetry as enable

    return enable(tracer_provider)


def __getattr__(name: str) -> Any:
    if name == "OpenTelemetrySink":
        from rag_multihop.tracing.otel import OpenTelemetrySink

        return OpenTelemetrySink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
