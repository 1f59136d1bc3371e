"""LLMCache: keys, persistence, format version, bad entries."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rag_multihop.llm import LLMCache, default_cache_path
from rag_multihop.llm.cache import cache_key

REQUEST = {
    "model": "openai/gpt-4o-mini",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.0,
}


@pytest.mark.parametrize(
    "change",
    [
        {"model": "openai/gpt-4o"},
        {"messages": [{"role": "user", "content": "hi!"}]},
        {"temperature": 0.5},
        {"api_base": "http://localhost:8000/v1"},
        {"response_format": {"type": "json_object"}},
    ],
)
def test_key_changes_with_anything_that_changes_the_reply(change: dict[str, object]) -> None:
    assert cache_key({**REQUEST, **change}) != cache_key(REQUEST)


def test_key_ignores_dict_order() -> None:
    assert cache_key(dict(reversed(list(REQUEST.items())))) == cache_key(REQUEST)


def test_entries_persist_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "llm.sqlite"
    key = cache_key(REQUEST)
    LLMCache(path).put(key, {"text": "hello", "prompt_tokens": 3})
    again = LLMCache(path)
    assert again.get(key) == {"text": "hello", "prompt_tokens": 3}
    assert again.get(cache_key({**REQUEST, "temperature": 1.0})) is None
    again.put(key, {"text": "replaced"})
    assert len(again) == 1 and again.get(key) == {"text": "replaced"}
    again.clear()
    assert len(again) == 0


def test_unreadable_entry_is_a_miss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = LLMCache(tmp_path / "llm.sqlite")
    cache.put("k", {"text": "x"})
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE replies SET payload = '{not json' WHERE key = 'k'")
    assert cache.get("k") is None
    assert "unreadable LLM cache entry" in caplog.text


def test_other_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(ValueError, match="format version 99, expected 1"):
        LLMCache(path).get("k")


def test_default_path_follows_the_cache_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_MULTIHOP_CACHE", str(tmp_path))
    assert default_cache_path() == tmp_path / "llm" / "replies.sqlite"
