"""rag-multihop's stage spans in LlamaIndex's instrumentation.

Every stage of every rag-multihop method (hop 1, expansion, judge, PPR, fusion, each LLM
call, ...; see ``docs/tracing.md``) becomes a span of LlamaIndex's instrumentation
dispatcher, nested in the span of the LlamaIndex call that ran it (``retrieve``,
``postprocess_nodes``, ``query``), and ends with a :class:`StageEndEvent` holding its counts.
So a span handler you add to the root dispatcher, or Arize Phoenix's
``LlamaIndexInstrumentor().instrument()``, sees them with the rest of your app.

Importing this package registers the forwarding :data:`SINK` once
(:func:`rag_multihop.tracing.add_sink`); it forwards only while a handler is attached (the
dispatcher's null handlers do not count), so it costs nothing otherwise.
:func:`uninstrument` removes it, :func:`instrument` adds it back.

Example:
    >>> from llama_index.core.instrumentation import get_dispatcher
    >>> from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
    >>> from rag_multihop.tracing import span
    >>> handler = SimpleSpanHandler()
    >>> get_dispatcher().add_span_handler(handler)
    >>> with span("demo.stage", candidates=3):
    ...     pass
    >>> [s.id_.partition("-")[0] for s in handler.completed_spans]
    ['rag_multihop.demo.stage']
    >>> get_dispatcher().span_handlers.remove(handler)
"""

from __future__ import annotations

import contextlib
import inspect
import uuid
from contextvars import Token
from dataclasses import dataclass
from typing import Any

from llama_index.core.instrumentation import Dispatcher, get_dispatcher
from llama_index.core.instrumentation.event_handlers import NullEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import active_span_id
from llama_index.core.instrumentation.span_handlers import NullSpanHandler

from rag_multihop.tracing import Span, add_sink, remove_sink

DISPATCHER_NAME = "rag_multihop"
"""The dispatcher the stages are sent through (a child of LlamaIndex's root dispatcher)."""

_ATTRIBUTES = inspect.Signature([inspect.Parameter("attributes", inspect.Parameter.KEYWORD_ONLY)])


class StageEndEvent(BaseEvent):
    """A rag-multihop stage ended: its span name, attributes (counts, LLM tokens) and wall
    time; ``span_id`` is the stage's span."""

    name: str
    attributes: dict[str, Any]
    seconds: float
    error: str | None = None

    @classmethod
    def class_name(cls) -> str:
        return "RagMultihopStageEndEvent"


@dataclass
class _Open:
    id_: str
    bound: inspect.BoundArguments
    token: Token[str | None]


class LlamaIndexSink:
    """Forwards stage spans to a LlamaIndex instrumentation :class:`Dispatcher`.

    A span's id is ``"<span name>-<uuid>"`` (LlamaIndex's form: handlers name spans by the
    part before the first ``-``), its parent the active LlamaIndex span, its bound arguments
    ``attributes=<the attributes at the start>`` and its result the attributes at the end.
    """

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        self.dispatcher = dispatcher if dispatcher is not None else get_dispatcher(DISPATCHER_NAME)

    def listening(self) -> bool:
        """Whether a handler other than LlamaIndex's null ones would see a span."""
        current: Dispatcher | None = self.dispatcher
        while current is not None:
            if any(not isinstance(h, NullSpanHandler) for h in current.span_handlers):
                return True
            if any(not isinstance(h, NullEventHandler) for h in current.event_handlers):
                return True
            manager = current.manager
            if not current.propagate or manager is None:
                return False
            current = manager.dispatchers.get(current.parent_name)
        return False

    def start(self, span: Span) -> _Open:
        id_ = f"{span.name}-{uuid.uuid4()}"
        bound = _ATTRIBUTES.bind(attributes=dict(span.attributes))
        parent = active_span_id.get()
        token = active_span_id.set(id_)
        self.dispatcher.span_enter(
            id_=id_, bound_args=bound, instance=None, parent_id=parent, tags=dict(span.attributes)
        )
        return _Open(id_, bound, token)

    def end(self, span: Span, state: object) -> None:
        assert isinstance(state, _Open)
        error = span.error
        try:
            self.dispatcher.event(
                StageEndEvent(
                    span_id=state.id_,
                    name=span.name,
                    attributes=dict(span.attributes),
                    seconds=span.seconds or 0.0,
                    error=None if error is None else type(error).__name__,
                )
            )
            if error is None:
                self.dispatcher.span_exit(
                    id_=state.id_, bound_args=state.bound, result=dict(span.attributes)
                )
            elif isinstance(error, Exception):
                self.dispatcher.span_drop(id_=state.id_, bound_args=state.bound, err=error)
            else:  # cancelled or interrupted: closed without an error of the app's
                self.dispatcher.span_exit(id_=state.id_, bound_args=state.bound, result=None)
        finally:
            with contextlib.suppress(ValueError):  # ended in another context than started in
                active_span_id.reset(state.token)


SINK = LlamaIndexSink()
"""The sink this package registers on import."""


def instrument() -> LlamaIndexSink:
    """Send rag-multihop's stage spans to LlamaIndex's dispatcher (done on import)."""
    return add_sink(SINK)


def uninstrument() -> None:
    """Stop sending them (:func:`instrument` starts again)."""
    remove_sink(SINK)


instrument()
