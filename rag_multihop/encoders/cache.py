"""An on-disk embedding cache keyed by model name and text hash.

Each call that finds uncached texts encodes only those and writes them as one new shard
(``.npz`` with the text hashes and vectors) under ``<cache_dir>/<model slug>/``; shards are
written atomically, so an interrupted run never leaves a half-written file behind.

Example:
    >>> import tempfile
    >>> class Ones:
    ...     name, dim = "ones", 2
    ...     def encode(self, texts, *, show_progress=False):
    ...         return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)
    >>> enc = CachedEncoder(Ones(), tempfile.mkdtemp())
    >>> enc.encode(["a", "b"]).shape, enc.encode(["b", "c"]).shape, enc.cache.misses
    ((2, 2), (2, 2), 3)
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rag_multihop import paths
from rag_multihop.encoders.base import Encoder
from rag_multihop.validation import as_embedding_matrix, check_texts

logger = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``embeddings/`` under the cache root (:func:`rag_multihop.paths.cache_dir`)."""
    return paths.cache_dir("embeddings")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EmbeddingCache:
    """Vectors of one model, by text hash, persisted as shards in a directory."""

    def __init__(self, directory: str | os.PathLike[str], model_name: str, dim: int) -> None:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name).strip("_") or "model"
        self.directory = Path(directory) / slug
        self.model_name = model_name
        self.dim = dim
        self.hits = 0
        self.misses = 0
        self._vectors: dict[str, np.ndarray] = {}
        self._load()

    def _load(self) -> None:
        """Read every shard; a shard that is unreadable or inconsistent (truncated, corrupt,
        keys and vectors of different lengths, another dimension, non-finite values) is
        skipped with a warning naming the file, and its texts are encoded again on demand."""
        for shard in sorted(self.directory.glob("shard-*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                logger.warning("ignoring unreadable embedding cache shard %s: %s", shard, exc)
                continue
            problem = _shard_problem(keys, vectors, self.dim)
            if problem:
                logger.warning("ignoring embedding cache shard %s: %s", shard, problem)
                continue
            self._vectors.update(zip(keys.tolist(), vectors, strict=True))

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: str) -> np.ndarray | None:
        return self._vectors.get(key)

    def put_many(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors`` under ``keys`` and persist them as one new shard."""
        if not keys:
            return
        self._vectors.update(zip(keys, vectors, strict=True))
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, keys=np.asarray(keys), vectors=vectors.astype(np.float32))
            digest = hashlib.sha256("".join(keys).encode()).hexdigest()[:16]
            os.replace(tmp, self.directory / f"shard-{digest}.npz")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _shard_problem(keys: np.ndarray, vectors: np.ndarray, dim: int) -> str | None:
    """Why a shard's arrays cannot be trusted, or ``None``."""
    if keys.ndim != 1 or keys.dtype.kind not in "US":
        return f"keys are not a list of strings (shape {keys.shape}, dtype {keys.dtype})"
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        return f"vectors have shape {vectors.shape}, expected (n, {dim})"
    if len(keys) != len(vectors):
        return f"{len(keys)} keys but {len(vectors)} vectors"
    if vectors.dtype.kind != "f" or not np.isfinite(vectors).all():
        return "vectors hold NaN, infinity or non-float values"
    return None


class CachedEncoder:
    """An :class:`Encoder` that reads and writes an :class:`EmbeddingCache` around another one."""

    def __init__(self, encoder: Encoder, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.encoder = encoder
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._cache: EmbeddingCache | None = None

    @property
    def name(self) -> str:
        return self.encoder.name

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_dir, self.encoder.name, self.encoder.dim)
        return self._cache

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        texts = check_texts(texts)
        cache = self.cache
        keys = [text_key(t) for t in texts]
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if cache.get(k) is None}
        cache.hits += sum(1 for k in keys if k not in missing)
        if missing:
            cache.misses += len(missing)
            new = self.encoder.encode(list(missing.values()), show_progress=show_progress)
            new = as_embedding_matrix(new, name="the encoder's vectors", dim=self.dim)
            cache.put_many(list(missing), new)
        return np.stack([self._vector(cache, k) for k in keys])

    @staticmethod
    def _vector(cache: EmbeddingCache, key: str) -> np.ndarray:
        vector = cache.get(key)
        if vector is None:  # only if put_many failed to store it, which would be a bug
            raise RuntimeError(f"embedding cache lost key {key}")
        return vector.astype(np.float32)


class MemoEncoder:
    """An :class:`Encoder` that remembers, in memory, the vectors of the last ``max_items``
    texts it encoded (keyed by text hash, least recently used dropped first): a reranker that
    meets the same passages on every query embeds each of them once. Thread-safe.

    >>> class Ones:
    ...     name, dim, calls = "ones", 2, 0
    ...     def encode(self, texts, *, show_progress=False):
    ...         self.calls += 1
    ...         return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)
    >>> memo = MemoEncoder(Ones(), max_items=10)
    >>> memo.encode(["a", "b"]).shape, memo.encode(["b", "a"]).shape, memo.encoder.calls
    ((2, 2), (2, 2), 1)
    """

    def __init__(self, encoder: Encoder, max_items: int = 100_000) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items <= 0:
            raise ValueError(f"max_items must be a positive integer, got {max_items!r}")
        self.encoder = encoder
        self.max_items = max_items
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.encoder.name

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        texts = check_texts(texts)
        keys = [text_key(t) for t in texts]
        with self._lock:
            found = {k: self._vectors[k] for k in keys if k in self._vectors}
            for key in found:
                self._vectors.move_to_end(key)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            new = self.encoder.encode(list(missing.values()), show_progress=show_progress)
            new = as_embedding_matrix(new, name="the encoder's vectors")
            found.update(zip(missing, new, strict=True))
            with self._lock:
                self._vectors.update(zip(missing, new, strict=True))
                while len(self._vectors) > self.max_items:
                    self._vectors.popitem(last=False)
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def remember(self, texts: Sequence[str], vectors: np.ndarray | None = None) -> int:
        """Hold the vectors of ``texts`` (``vectors``, one row per text, or the wrapped
        encoder's for texts not yet held, one call) so later calls find them; returns how
        many texts were new. Precomputes query-independent texts, e.g.
        :meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.prepare`."""
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        with self._lock:
            new = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}
        if not new:
            return 0
        if vectors is None:
            rows = as_embedding_matrix(
                self.encoder.encode(list(new.values())), name="the encoder's vectors", dim=self.dim
            )
        else:
            matrix = as_embedding_matrix(vectors, name="text vectors", dim=self.dim)
            if len(matrix) != len(texts):
                raise ValueError(f"got {len(texts)} texts but {len(matrix)} vectors")
            position = {k: i for i, k in enumerate(keys)}
            rows = matrix[[position[k] for k in new]]
        with self._lock:
            self._vectors.update(zip(new, rows, strict=True))
            while len(self._vectors) > self.max_items:
                self._vectors.popitem(last=False)
        return len(new)
