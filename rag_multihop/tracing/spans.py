"""Spans: one per stage of each method, free when nobody listens.

A stage opens ``with span("multihop.pair", candidates=12) as s:`` and may add counts as it
learns them (``s.set(pair_score=0.8)``). What happens to the span is up to the **sinks**
registered with :func:`add_sink`: the OpenTelemetry sink of :mod:`rag_multihop.tracing.otel`,
the LlamaIndex dispatcher and Haystack tracer bridges of the integrations, or your own. With
no sink listening, :func:`span` returns one shared no-op context and creates nothing.

Names and attributes: a span opened as ``span("multihop.pair", candidates=12)`` is named
``rag_multihop.multihop.pair`` and carries ``rag_multihop.candidates = 12``; keyword
attributes get the ``rag_multihop.`` prefix, a mapping passed positionally keeps its names
(``{"gen_ai.usage.input_tokens": 40}``, the OpenTelemetry GenAI names of LLM calls).

Spans nest through a context variable: a span opened inside another (in the same thread, in
an ``asyncio`` task created inside it, or in ``asyncio.to_thread``) is its child. A sink that
raises is logged and never breaks retrieval.

A sink is any object with three methods (:class:`SpanSink`): ``listening()`` (cheap; ``False``
skips it), ``start(span)`` returning a state and ``end(span, state)`` when the span closes
(``span.error`` holds the exception when the stage raised).

Example:
    >>> class Printer:
    ...     def listening(self): return True
    ...     def start(self, span): return None
    ...     def end(self, span, state):
    ...         parent = span.parent.name if span.parent else None
    ...         print(span.name, dict(span.attributes), parent)
    >>> sink = add_sink(Printer())
    >>> with span("demo.run", k=2):
    ...     with span("demo.stage") as stage:
    ...         stage.set(candidates=5)
    rag_multihop.demo.stage {'rag_multihop.candidates': 5} rag_multihop.demo.run
    rag_multihop.demo.run {'rag_multihop.k': 2} None
    >>> remove_sink(sink)
    >>> span("demo.run") is span("other.stage")  # nobody listens: one shared no-op
    True
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

logger = logging.getLogger(__name__)

PREFIX = "rag_multihop"
"""The prefix of every span name and of every keyword attribute."""

AttributeValue = str | bool | int | float | tuple[str, ...] | tuple[int, ...] | tuple[float, ...]
"""What an attribute may hold (OpenTelemetry's primitive types and their sequences)."""


@dataclass(eq=False)
class Span:
    """One stage of one call: its name, attributes, parent and times (``time.time_ns``)."""

    name: str
    attributes: dict[str, AttributeValue]
    parent: Span | None
    span_id: int
    start_ns: int
    end_ns: int | None = None
    error: BaseException | None = None
    recording: bool = field(default=True, init=False)

    def set(self, **attributes: Any) -> None:
        """Add or replace attributes, named with the ``rag_multihop.`` prefix."""
        self.attributes.update(_prefixed(attributes))

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Add or replace attributes under the names given (e.g. ``gen_ai.*``)."""
        self.attributes.update((k, _value(v)) for k, v in attributes.items())

    @property
    def seconds(self) -> float | None:
        """Wall time, once the span has ended."""
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e9


class NoSpan:
    """What a stage gets when nobody listens: accepts attributes and drops them."""

    __slots__ = ()
    recording = False

    def set(self, **attributes: Any) -> None:
        """Nothing (nobody listens)."""

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Nothing (nobody listens)."""


NO_SPAN = NoSpan()


@runtime_checkable
class SpanSink(Protocol):
    """Receives spans (see the module docstring)."""

    def listening(self) -> bool: ...

    def start(self, span: Span) -> object: ...

    def end(self, span: Span, state: object) -> None: ...


S = TypeVar("S", bound=SpanSink)

_sinks: tuple[SpanSink, ...] = ()
_lock = threading.Lock()
_current: ContextVar[Span | None] = ContextVar("rag_multihop_span", default=None)
_ids = itertools.count(1)


def add_sink(sink: S) -> S:
    """Register ``sink`` (once; adding it again changes nothing) and return it."""
    global _sinks
    if not isinstance(sink, SpanSink):
        raise TypeError(
            f"sink must have listening(), start(span) and end(span, state), got "
            f"{type(sink).__name__}"
        )
    with _lock:
        if sink not in _sinks:
            _sinks = (*_sinks, sink)
    return sink


def remove_sink(sink: SpanSink) -> None:
    """Unregister ``sink`` (nothing happens when it is not registered)."""
    global _sinks
    with _lock:
        _sinks = tuple(s for s in _sinks if s is not sink)


def sinks() -> tuple[SpanSink, ...]:
    """The registered sinks, in registration order."""
    return _sinks


def current_span() -> Span | None:
    """The innermost open span of this context (``None`` when none is recording)."""
    return _current.get()


def set_attributes(**attributes: Any) -> None:
    """Add ``rag_multihop.``-prefixed attributes to the innermost open span, if any."""
    active = _current.get()
    if active is not None:
        active.set(**attributes)


class _NoRecording:
    __slots__ = ()

    def __enter__(self) -> NoSpan:
        return NO_SPAN

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_RECORDING = _NoRecording()


def span(
    name: str, attributes: Mapping[str, Any] | None = None, /, **prefixed: Any
) -> AbstractContextManager[Span | NoSpan]:
    """A span named ``rag_multihop.<name>`` around a stage (see the module docstring)."""
    registered = _sinks
    if not registered:
        return _NO_RECORDING
    live = [s for s in registered if _listens(s)]
    if not live:
        return _NO_RECORDING
    values = {} if attributes is None else {k: _value(v) for k, v in attributes.items()}
    values.update(_prefixed(prefixed))
    return _recording(f"{PREFIX}.{name}", values, live)


@contextmanager
def _recording(
    name: str, attributes: dict[str, AttributeValue], live: Sequence[SpanSink]
) -> Iterator[Span]:
    record = Span(name, attributes, _current.get(), next(_ids), time.time_ns())
    states = _started(record, live)
    token = _current.set(record)
    try:
        yield record
    except BaseException as exc:
        record.error = exc
        raise
    finally:
        try:
            _current.reset(token)
        except ValueError:  # closed in another context than it was opened in
            _current.set(record.parent)
        _ended(record, states)


def record_span(
    name: str,
    attributes: Mapping[str, Any],
    start_ns: int,
    *,
    error: BaseException | None = None,
) -> None:
    """Send a span that already ended (from ``start_ns`` to now), a child of the current span
    but never current itself: for work whose start and end lie in different contexts, such as
    a stream consumed piece by piece. Attribute names are taken as given."""
    live = [s for s in _sinks if _listens(s)]
    if not live:
        return
    values = {k: _value(v) for k, v in attributes.items()}
    record = Span(f"{PREFIX}.{name}", values, _current.get(), next(_ids), start_ns)
    record.error = error
    _ended(record, _started(record, live))


def _started(record: Span, live: Sequence[SpanSink]) -> list[tuple[SpanSink, object]]:
    """Each sink's state for ``record`` (a sink that fails is logged and left out)."""
    states: list[tuple[SpanSink, object]] = []
    for sink in live:
        try:
            states.append((sink, sink.start(record)))
        except Exception:
            logger.exception("span sink %s failed to start %s", type(sink).__name__, record.name)
    return states


def _ended(record: Span, states: Sequence[tuple[SpanSink, object]]) -> None:
    """Stamp ``record``'s end and tell the sinks (the last started first)."""
    record.end_ns = time.time_ns()
    for sink, state in reversed(states):
        try:
            sink.end(record, state)
        except Exception:
            logger.exception("span sink %s failed to end %s", type(sink).__name__, record.name)


def _listens(sink: SpanSink) -> bool:
    try:
        return bool(sink.listening())
    except Exception:
        logger.exception("span sink %s failed in listening()", type(sink).__name__)
        return False


def _prefixed(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    return {f"{PREFIX}.{key}": _value(value) for key, value in attributes.items()}


def _value(value: Any) -> AttributeValue:
    """``value`` as an attribute: numbers and strings as they are (numpy scalars as Python
    numbers), other sequences as tuples of strings, anything else as its ``str``."""
    if isinstance(value, str | bool | int | float):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        scalar = item()
        if isinstance(scalar, bool | int | float):
            return scalar
    if isinstance(value, Sequence | set | frozenset):
        items = list(value)
        if items and all(isinstance(v, bool | int) for v in items):
            return tuple(int(v) for v in items)
        if items and all(isinstance(v, int | float) for v in items):
            return tuple(float(v) for v in items)
        return tuple(str(v) for v in items)
    return str(value)
