"""Proof that what answers on a port of 127.0.0.1 is the server this process started.

:class:`~rag_multihop.llm.local.LocalServer` starts ``llama-server`` with a random API key
(``LLAMA_API_KEY``, never on the command line) and calls :func:`probe` until it says
``"ours"``. A port may be taken by another program in the gap between choosing it and the
server binding it, and ``llama-server`` binds with ``SO_REUSEPORT``, so a foreign listener can
even share the port and receive some of the connections. The proof has two parts:

1. **The key.** ``/health`` is public, so after it answers 200, ``/props`` must refuse a decoy
   key (401) and accept ours (200). Only a process given our key can pass; a foreign server
   that accepts anything, or refuses everything, fails.
2. **The listeners** (Linux, from ``/proc``): every socket listening on the port at an
   address that 127.0.0.1 reaches (``127.0.0.1``, ``0.0.0.0``, ``::``) must belong to a process
   of the server's session. Anything else shares the port and would receive prompts.

Example:
    >>> _address_reaches_loopback("0100007F"), _address_reaches_loopback("0101A8C0")
    (True, False)
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Literal

Probe = Literal["down", "loading", "ours", "foreign"]

_LOOPBACK_ADDRESSES = frozenset(
    {
        "0100007F",  # 127.0.0.1 (little-endian, as /proc/net/tcp writes it)
        "00000000",  # 0.0.0.0
        "0" * 32,  # ::
        "0000000000000000FFFF00000100007F",  # ::ffff:127.0.0.1
    }
)
_LISTEN = "0A"


def _status(url: str, key: str | None, timeout: float) -> int | None:
    """The HTTP status of GET ``url`` (``None`` when nothing answers)."""
    request = urllib.request.Request(url)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None


def probe(port: int, api_key: str, session: int, *, timeout: float = 2.0) -> tuple[Probe, str]:
    """Whether the server of ``session`` (the watchdog's pid) answers on ``port`` as ours,
    with the reason when it is ``"foreign"``."""
    base = f"http://127.0.0.1:{port}"
    health = _status(f"{base}/health", None, timeout)
    if health is None:
        return "down", ""
    if health == 503:
        return "loading", ""
    if health != 200:
        return "foreign", f"/health answered HTTP {health}"
    decoy = _status(f"{base}/props", "decoy-" + os.urandom(8).hex(), timeout)
    if decoy != 401:
        return "foreign", f"it accepted a wrong API key (HTTP {decoy})"
    ours = _status(f"{base}/props", api_key, timeout)
    if ours == 503:
        return "loading", ""
    if ours != 200:
        return "foreign", f"it refused this server's API key (HTTP {ours})"
    strangers = foreign_listeners(port, session)
    if strangers:
        return "foreign", f"processes outside the server also listen on it ({strangers})"
    return "ours", ""


def foreign_listeners(port: int, session: int) -> list[str]:
    """Sockets listening on ``port`` (at addresses 127.0.0.1 reaches) that no process of
    ``session`` holds, as ``socket <inode>``; empty without ``/proc``."""
    listening = _listening_inodes(port)
    if not listening:
        return []
    ours: set[str] = set()
    for pid in _session_pids(session):
        ours |= _socket_inodes(pid)
    return [f"socket {inode}" for inode in sorted(listening - ours)]


def _address_reaches_loopback(address: str) -> bool:
    return address.upper() in _LOOPBACK_ADDRESSES


def _listening_inodes(port: int) -> set[str]:
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            address, _, hex_port = fields[1].partition(":")
            if int(hex_port, 16) == port and _address_reaches_loopback(address):
                found.add(fields[9])
    return found


def _session_pids(session: int) -> list[int]:
    """The processes whose session id is ``session`` (the watchdog leads its own)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # state ppid pgrp session ...
        if len(fields) > 3 and int(fields[3]) == session:
            pids.append(int(entry.name))
    return pids


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes
