"""An event loop in a daemon thread, so synchronous code can run coroutines on it.

:class:`~rag_multihop.llm.client.LLMClient` keeps one (``LLMClient.run``): reusing one loop
keeps litellm's per-loop HTTP clients and logging worker alive between calls.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

R = TypeVar("R")


class LoopThread:
    """An event loop running in a daemon thread, for running coroutines from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="rag-multihop-llm", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        try:  # stopped: cancel what is left (litellm's logging tasks), then close
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """The coroutine's result (its exception raised here), waiting in this thread."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop and join the thread (a no-op once stopped)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=10)


def loop_running() -> bool:
    """Whether the calling thread runs an event loop (sync entry points refuse to block it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
