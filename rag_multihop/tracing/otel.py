"""The OpenTelemetry sink: every stage span becomes an OpenTelemetry span.

Needs ``opentelemetry-api`` (``pip install 'rag-multihop[otel]'``) and, to export anything, an
SDK ``TracerProvider`` with an exporter (OTLP to Phoenix or Langfuse, the console, an
in-memory exporter in tests). Spans join the current OpenTelemetry context: a stage opened
inside your own span, a Haystack component's span or an instrumented LlamaIndex call nests
under it, and calls you make inside a stage (an instrumented HTTP client) nest under the
stage. See ``docs/tracing.md`` for the names and attributes.

Example (an in-memory exporter; use an OTLP exporter to send them to a collector):
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> from rag_multihop.tracing import remove_sink, span
    >>> exporter = InMemorySpanExporter()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> sink = enable_opentelemetry(provider)
    >>> with span("demo.stage", candidates=3):
    ...     pass
    >>> [(s.name, dict(s.attributes)) for s in exporter.get_finished_spans()]
    [('rag_multihop.demo.stage', {'rag_multihop.candidates': 3})]
    >>> remove_sink(sink)
"""

from __future__ import annotations

from typing import Any, cast

from rag_multihop._optional import require
from rag_multihop._version import __version__
from rag_multihop.tracing.spans import Span, add_sink

INSTRUMENTATION_NAME = "rag_multihop"
"""The instrumentation scope of the spans (``Tracer`` name)."""


class OpenTelemetrySink:
    """Forwards stage spans to OpenTelemetry.

    Args:
        tracer_provider: the provider to draw the tracer from (``None``: the global one, as
            set by ``opentelemetry.trace.set_tracer_provider`` or an OTel distro).
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        trace = require("opentelemetry.trace", extra="otel")
        self._trace = trace
        self._context = require("opentelemetry.context", extra="otel")
        self._tracer = trace.get_tracer(
            INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider
        )

    def listening(self) -> bool:
        return True

    def start(self, span: Span) -> tuple[Any, object]:
        otel_span = self._tracer.start_span(
            span.name, attributes=span.attributes, start_time=span.start_ns
        )
        token = self._context.attach(self._trace.set_span_in_context(otel_span))
        return otel_span, token

    def end(self, span: Span, state: object) -> None:
        otel_span, token = cast(tuple[Any, object], state)
        otel_span.set_attributes(span.attributes)
        if span.error is not None:
            otel_span.set_attribute("error.type", type(span.error).__name__)
            otel_span.record_exception(span.error)
            status = self._trace.Status(self._trace.StatusCode.ERROR, type(span.error).__name__)
            otel_span.set_status(status)
        self._context.detach(token)
        otel_span.end(end_time=span.end_ns)


def enable_opentelemetry(tracer_provider: Any = None) -> OpenTelemetrySink:
    """Register an :class:`OpenTelemetrySink` (``tracer_provider=None``: the global provider)
    and return it; :func:`~rag_multihop.tracing.remove_sink` turns it off."""
    return add_sink(OpenTelemetrySink(tracer_provider))
