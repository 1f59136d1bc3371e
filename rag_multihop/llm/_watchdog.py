"""Runs a server command for as long as its owner lives (standard library only).

Usage (by path, not as a package module): ``python _watchdog.py OWNER_PID FD -- COMMAND...``.

:class:`~rag_multihop.llm.local.LocalServer` starts ``llama-server`` through this script.
The owner keeps the write end of a pipe whose read end is ``FD`` here. The watchdog stops the
server (SIGTERM, then SIGKILL after :data:`GRACE_S`) and exits as soon as any of these holds:

- the pipe reaches end of file: the owner closed it (``LocalServer.stop``) or the owner ended,
  however it ended, SIGKILL included (the kernel closes a dead process's descriptors);
- its parent is no longer ``OWNER_PID`` (checked every :data:`POLL_S` seconds, in case a
  child the owner forked without exec still holds the pipe open);
- the watchdog itself receives SIGTERM, SIGINT or SIGHUP.

When the server exits on its own, the watchdog exits with its status. On Linux the server
is also started with a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so it dies
even when the watchdog is killed with SIGKILL; the watchdog is single-threaded, so the
thread that forked the server lives as long as the watchdog.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence

POLL_S = 0.5
GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    parent = os.getpid()

    def set_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the watchdog died before the signal was armed
            os._exit(1)

    return set_signal


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _owner_gone(fd: int, owner: int) -> bool:
    """Wait up to :data:`POLL_S` for the pipe; whether the owner has gone."""
    ready, _, _ = select.select([fd], [], [], POLL_S)
    if ready and not os.read(fd, 4096):
        return True  # end of file: every write end is closed
    return os.getppid() != owner


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: _watchdog.py OWNER_PID FD -- COMMAND...", file=sys.stderr)
        return 2
    owner, fd = int(argv[0]), int(argv[1])
    server = subprocess.Popen(list(argv[3:]), preexec_fn=_parent_death_signal())

    def on_signal(signum: int, frame: object) -> None:
        _stop(server)
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        while server.poll() is None:
            if _owner_gone(fd, owner):
                return 0
        return server.returncode
    finally:
        _stop(server)
        with contextlib.suppress(OSError):
            os.close(fd)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
