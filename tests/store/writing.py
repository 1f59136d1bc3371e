"""Run a check over and over while a writer thread works (readers racing a writer)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def checks_while_writing(write: Callable[[], None], check: Callable[[], None]) -> int:
    """Call ``check`` until ``write`` (run in a thread) returns; how many times it ran. The
    thread is joined even when a check fails."""
    done = threading.Event()

    def run() -> None:
        try:
            write()
        finally:
            done.set()

    thread = threading.Thread(target=run)
    thread.start()
    checks = 0
    try:
        while not done.is_set():
            check()
            checks += 1
    finally:
        thread.join()
    return checks
