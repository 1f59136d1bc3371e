"""Where rag-multihop keeps its files: the cache folder and the shared datasets folder.

One rule each, written once:

- the cache root is ``$RAG_MULTIHOP_CACHE``, else ``~/.cache/rag_multihop``; each user of it
  (embeddings, LLM replies, token states, fine-tuned encoders, the chats) takes one
  subfolder, :func:`cache_dir` ``(name)``;
- the named datasets' folder is the one given, else ``$RAG_MULTIHOP_DATA``, else
  ``../shared/datasets`` next to the working directory when it exists (:func:`data_dir`).

Example:
    >>> cache_dir("embeddings") == cache_root() / "embeddings"
    True
    >>> cache_dir("../elsewhere")
    Traceback (most recent call last):
    ...
    ValueError: cache folder name must be one plain folder name, got '../elsewhere'
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "RAG_MULTIHOP_CACHE"
"""Environment variable naming the cache root (default ``~/.cache/rag_multihop``)."""
DATA_ENV = "RAG_MULTIHOP_DATA"
"""Environment variable naming the folder of the named datasets."""


def cache_root() -> Path:
    """``$RAG_MULTIHOP_CACHE``, else ``~/.cache/rag_multihop`` (read at each call)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rag_multihop")


def cache_dir(name: str) -> Path:
    """The cache subfolder ``name`` (``embeddings``, ``llm``, ``token_states``, ...); not
    created here. ``ValueError`` for a name that is not one plain folder name."""
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise ValueError(f"cache folder name must be one plain folder name, got {name!r}")
    return cache_root() / name


def data_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """The named datasets' folder: ``given``, else ``$RAG_MULTIHOP_DATA``, else
    ``../shared/datasets`` next to the working directory when it exists.

    Raises:
        ValueError: none of them names a folder (the message says how to name one).
    """
    if given is not None:
        return Path(given)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    shared = Path.cwd().parent / "shared" / "datasets"
    if shared.is_dir():
        return shared
    raise ValueError(f"no data folder: pass --data-dir or set ${DATA_ENV}")
