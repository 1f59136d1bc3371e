"""The cache and data folder rules, written once in ``rag_multihop.paths`` and used by every
cache (embeddings, LLM replies) and by the CLI."""

from __future__ import annotations

import pytest

from rag_multihop.encoders.cache import default_cache_dir
from rag_multihop.llm.cache import default_cache_path
from rag_multihop.paths import cache_dir, data_dir


def test_every_cache_follows_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_MULTIHOP_CACHE", str(tmp_path))
    assert cache_dir("token_states") == tmp_path / "token_states"
    assert default_cache_dir() == tmp_path / "embeddings"
    assert default_cache_path() == tmp_path / "llm" / "replies.sqlite"


def test_the_cache_defaults_to_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_MULTIHOP_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir("chatbots") == tmp_path / ".cache" / "rag_multihop" / "chatbots"


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b"])
def test_a_cache_name_is_one_plain_folder(bad):
    with pytest.raises(ValueError, match=f"one plain folder name, got {bad!r}"):
        cache_dir(bad)


def test_data_folder_comes_from_the_argument_then_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_MULTIHOP_DATA", str(tmp_path / "env"))
    assert data_dir(tmp_path) == tmp_path
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv("RAG_MULTIHOP_DATA")
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert data_dir() == tmp_path / "shared" / "datasets"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"set \$RAG_MULTIHOP_DATA"):
        data_dir()
