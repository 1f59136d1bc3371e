"""Streamed replies: :class:`TextStream` / :class:`AsyncTextStream` (what
:meth:`LLMClient.stream <rag_multihop.llm.client.LLMClient.stream>` returns), the timeout of
a whole streamed attempt (:func:`bounded`, :func:`abounded`) and the collector that turns a
stream's deltas into one reply."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator

from rag_multihop.llm.replies import LLMReply
from rag_multihop.llm.transport import RawReply, StreamDelta, aclose_stream, close_stream

logger = logging.getLogger(__name__)

__all__ = ["AsyncTextStream", "Collected", "StreamTimeout", "TextStream", "abounded", "bounded"]


class TextStream:
    """Text pieces of a streamed reply (see :meth:`LLMClient.stream`); after the last piece
    :attr:`reply` holds the whole reply with its account.

    Example (a fake streaming transport):
        >>> from rag_multihop.llm.transport import RawReply, StreamDelta
        >>> class Fake:
        ...     def check_model(self, model): pass
        ...     def missing_credentials(self, model, api_base): return []
        ...     def supports_response_schema(self, model): return False
        ...     def complete(self, request, *, api_key, timeout): return RawReply("hi there")
        ...     async def acomplete(self, request, *, api_key, timeout): return RawReply("")
        ...     def stream(self, request, *, api_key, timeout):
        ...         yield StreamDelta("hi ")
        ...         yield StreamDelta("there", finish_reason="stop")
        ...         yield StreamDelta(prompt_tokens=7, completion_tokens=2)
        ...     async def astream(self, request, *, api_key, timeout):
        ...         yield StreamDelta("hi")
        >>> from rag_multihop.llm.client import LLMClient
        >>> stream = LLMClient("openai/gpt-4o-mini", transport=Fake()).stream("Say hi.")
        >>> list(stream), stream.reply.text, stream.reply.account.total_tokens
        (['hi ', 'there'], 'hi there', 9)
    """

    def __init__(self, pieces: Iterator[str | LLMReply]) -> None:
        self._pieces = pieces
        self.reply: LLMReply | None = None

    def __iter__(self) -> Iterator[str]:
        for item in self._pieces:
            if isinstance(item, LLMReply):
                self.reply = item
            else:
                yield item


class AsyncTextStream:
    """The async twin of :class:`TextStream` (``async for``)."""

    def __init__(self, pieces: AsyncIterator[str | LLMReply]) -> None:
        self._pieces = pieces
        self.reply: LLMReply | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for item in self._pieces:
            if isinstance(item, LLMReply):
                self.reply = item
            else:
                yield item


class StreamTimeout(TimeoutError):
    """A streamed reply whose deltas took longer than the timeout to arrive."""


def _overdue(waited: float, timeout: float, received: int) -> StreamTimeout:
    if not received:
        return StreamTimeout(f"no reply within the timeout of {timeout:g} s")
    return StreamTimeout(
        f"the reply was still streaming after {waited:.2f} s of waiting for it, past the "
        f"timeout of {timeout:g} s ({received} chunk(s) received)"
    )


def bounded(deltas: Iterator[StreamDelta], timeout: float) -> Generator[StreamDelta, None, None]:
    """``deltas`` while the time spent waiting for them (not the reader's time between them)
    stays within ``timeout`` seconds, then :class:`StreamTimeout`; ``deltas`` is closed when
    this generator ends, however it ends.

    A blocking iterator can only be checked as each delta arrives: a delta that comes after
    the timeout is dropped, and a provider that goes silent is cut by the transport's own
    read timeout (litellm applies ``timeout`` to each read).
    """
    waited, received = 0.0, 0
    try:
        while True:
            start = time.monotonic()
            delta = next(deltas, None)
            waited += time.monotonic() - start
            if delta is None:
                return
            if waited > timeout:
                raise _overdue(waited, timeout, received)
            received += 1
            yield delta
    finally:
        close_stream(deltas)


async def abounded(
    deltas: AsyncIterator[StreamDelta], timeout: float
) -> AsyncGenerator[StreamDelta, None]:
    """The async twin of :func:`bounded`, exact: the wait for a delta is cancelled when the
    timeout runs out."""
    waited, received = 0.0, 0
    try:
        while True:
            timer = asyncio.timeout(timeout - waited)
            start = time.monotonic()
            try:
                async with timer:
                    delta = await anext(deltas)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if not timer.expired():
                    raise  # the transport's own
                raise _overdue(waited + time.monotonic() - start, timeout, received) from None
            waited += time.monotonic() - start
            received += 1
            yield delta
    finally:
        await aclose_stream(deltas)


class Collected:
    """What a stream delivered so far, turned into a :class:`RawReply` at its end.

    Without any usage, completion tokens are counted as pieces (one token per piece for
    OpenAI-compatible servers) and prompt tokens stay 0; that count, like a usage litellm
    estimated (``StreamDelta.usage_estimated``), makes the reply's usage an estimate
    (``RawReply.usage_estimated``).
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.model = ""
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.usage_estimated = False

    def add(self, delta: StreamDelta) -> bool:
        """Record ``delta``; whether it carries text to pass on."""
        self.finish_reason = delta.finish_reason or self.finish_reason
        self.model = delta.model or self.model
        if delta.prompt_tokens is not None:
            self.prompt_tokens = delta.prompt_tokens
        if delta.completion_tokens is not None:
            self.completion_tokens = delta.completion_tokens
        if delta.prompt_tokens is not None or delta.completion_tokens is not None:
            self.usage_estimated = delta.usage_estimated
        if delta.text:
            self.pieces.append(delta.text)
            return True
        return False

    def raw(self) -> RawReply:
        if self.completion_tokens is None:
            logger.debug("the stream reported no usage; counting %d pieces", len(self.pieces))
        return RawReply(
            text="".join(self.pieces),
            finish_reason=self.finish_reason,
            model=self.model,
            prompt_tokens=self.prompt_tokens or 0,
            completion_tokens=(
                self.completion_tokens if self.completion_tokens is not None else len(self.pieces)
            ),
            usage_estimated=self.usage_estimated or self.completion_tokens is None,
        )
