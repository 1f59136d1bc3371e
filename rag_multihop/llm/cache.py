"""An on-disk cache of LLM replies, keyed by a hash of (model, endpoint, messages, parameters).

litellm's own cache is not used: in litellm 1.106.2 a cache *hit* imports the proxy extras
(fastapi) and fails. This one is a single SQLite file; every write is one transaction, so an
interrupted run never leaves a half-written entry, and several processes may share the file.

What is stored is the provider's reply (text, finish reason, refusal, token counts, cost), as
JSON; parsing happens after the cache, so a changed schema or parser re-uses cached replies.
API keys are never part of a key or an entry. Replies are cached whatever the temperature:
with ``temperature > 0`` a cache makes runs repeatable rather than fresh samples.

Example:
    >>> import tempfile, os
    >>> cache = LLMCache(os.path.join(tempfile.mkdtemp(), "llm.sqlite"))
    >>> request = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    >>> key = cache_key(request)
    >>> cache.get(key) is None
    True
    >>> cache.put(key, {"text": "hello"})
    >>> cache.get(key), len(cache)
    ({'text': 'hello'}, 1)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from rag_multihop._atomic import ArtifactError
from rag_multihop.paths import cache_dir

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Stored as SQLite ``user_version``; a file with another version is refused, not misread."""
SQLITE_HEADER = b"SQLite format 3\x00"


def default_cache_path() -> Path:
    """``llm/replies.sqlite`` under the cache root (:func:`rag_multihop.paths.cache_dir`:
    ``$RAG_MULTIHOP_CACHE``, default ``~/.cache/rag_multihop``)."""
    return cache_dir("llm") / "replies.sqlite"


def cache_key(request: Mapping[str, Any]) -> str:
    """SHA-256 of the request as canonical JSON (sorted keys, no whitespace).

    ``request`` holds everything that changes the reply: model, api_base, messages and the
    sampling parameters. It must not hold the API key.

    >>> cache_key({"b": 1, "a": [1, 2]}) == cache_key({"a": [1, 2], "b": 1})
    True
    """
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMCache:
    """Replies by :func:`cache_key`, in one SQLite file created on first use.

    Args:
        path: the SQLite file; its folder is created when needed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._ready = False
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
            if header != SQLITE_HEADER:
                raise ArtifactError(
                    f"LLM cache {self.path} is not an SQLite database; delete it or pass "
                    "another cache path"
                )

    def __repr__(self) -> str:
        return f"LLMCache({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30.0)) as conn:
            try:
                if not self._ready:
                    self._init_schema(conn)
                    self._ready = True
                with conn:  # one transaction: committed on success, rolled back on error
                    yield conn
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                raise ArtifactError(f"LLM cache {self.path} is unusable: {exc}") from exc

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:  # a new file (or one another process is creating right now)
            with conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS replies "
                    "(key TEXT PRIMARY KEY, payload TEXT NOT NULL, created REAL NOT NULL)"
                )
                conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        elif version != FORMAT_VERSION:
            raise ArtifactError(
                f"LLM cache {self.path} has format version {version}, expected "
                f"{FORMAT_VERSION}; delete the file or pass another cache path"
            )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored payload, or ``None`` on a miss (an unreadable entry counts as a miss)."""
        with self._connect() as conn:
            row = conn.execute("SELECT payload FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            payload = json.loads(row[0])
        except json.JSONDecodeError as exc:
            logger.warning("ignoring unreadable LLM cache entry %s: %s", key[:12], exc)
            return None
        return payload if isinstance(payload, dict) else None

    def put(self, key: str, payload: Mapping[str, Any]) -> None:
        """Store ``payload`` (JSON-serialisable) under ``key``, replacing any older entry."""
        text = json.dumps(dict(payload), ensure_ascii=False)
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO replies (key, payload, created) VALUES (?, ?, ?)",
                (key, text, time.time()),
            )

    def __len__(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def clear(self) -> None:
        """Delete every entry."""
        with self._connect() as conn:
            conn.execute("DELETE FROM replies")
