"""Codecs for RaLa's stored token vectors: how a :class:`~rag_multihop.coop.store.PassageStates`
keeps its unit token rows on disk and in memory.

- ``float16``: the rows as float16 (2 bytes a dimension; the format of stores before codecs).
- ``int8``: one float16 scale per row and int8 values (1 byte a dimension).
- ``residual-4bit`` / ``residual-2bit``: PLAID-style (ColBERTv2's residual compression): the
  id of the row's nearest k-means centroid (uint16) plus its residual to that centroid, each
  dimension put into one of 2^b buckets by per-dimension quantile cutoffs and decoded as the
  bucket's per-dimension median (b = 4 or 2 bits a dimension). The centroids and cutoffs are
  fitted on the store's own rows (a sample of them), so a codec belongs to its store.

A codec's payload is a mapping of per-row arrays (first axis: the rows); its parameters are
the fitted arrays saved beside the payload (``.npy``, no pickle). Decoding returns float rows
of unit length, which is what RaLa's MaxSim reads.

Example:
    >>> rng = np.random.default_rng(0)
    >>> rows = rng.normal(size=(2000, 8)).astype("float32")
    >>> rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    >>> codec = fit_codec("residual-2bit", rows, seed=0)
    >>> payload = codec.encode(rows)
    >>> sorted(payload), payload["residual"].shape, codec.bytes_per_row(8)
    (['centroid', 'residual'], (2000, 2), 4)
    >>> bool((codec.decode(payload) * rows).sum(axis=1).mean() > 0.9)
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rag_multihop.validation import check_choice

CODEC_NAMES = ("residual-2bit", "residual-4bit", "int8", "float16")
"""Registered codec names, most compact first."""

DEFAULT_CODEC = "float16"
"""The codec new stores use. ``residual-2bit`` meets the size target (5.2× the dense index on
2Wiki, against float16's 39×) but costs 0.7 R@5 there (docs/coop.md), more than the 0.5
allowed, so it is opt-in."""

LEGACY_CODEC = "float16"
"""The codec of stores saved before codecs were recorded (format version 1)."""

_CHUNK = 65536
"""Rows encoded per step (bounds the temporary memory of a large store)."""


class TokenCodec(Protocol):
    """How token rows are packed: ``encode`` rows to a payload, ``decode`` a payload slice."""

    @property
    def name(self) -> str: ...

    def encode(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Per-row arrays (first axis: ``len(rows)``) for float32 unit ``rows`` ``(n, D)``."""
        ...

    def decode(self, payload: Mapping[str, np.ndarray]) -> np.ndarray:
        """Unit float rows ``(n, D)`` from a payload (or a slice of one along its rows)."""
        ...

    def parameters(self) -> dict[str, np.ndarray]:
        """The fitted arrays to save beside the payload (none for the per-row codecs)."""
        ...

    def config(self) -> dict[str, Any]:
        """JSON-able settings to save (with the name)."""
        ...

    def bytes_per_row(self, dim: int) -> int:
        """Payload bytes of one row of dimension ``dim``."""
        ...


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def check_rows(rows: object, dim: int | None = None) -> np.ndarray:
    """``rows`` as float32 ``(n, D)``, or ``ValueError`` for another shape, a dimension other
    than ``dim``, or NaN/inf values (naming the first bad row)."""
    array = np.asarray(rows, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"token rows must be a 2-D (n, dim) array, got shape {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"token rows have dimension {array.shape[1]}, the codec has {dim}")
    bad = ~np.isfinite(array).all(axis=1)
    if bad.any():
        raise ValueError(
            f"token rows contain NaN or inf values (first at row {int(np.argmax(bad))}, "
            f"{int(bad.sum())} rows in all)"
        )
    return array


@dataclass(frozen=True)
class Float16Codec:
    """Rows as float16; decoding returns the stored rows as they are (views)."""

    name: str = "float16"
    payload_name = "tokens"

    def encode(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        return {self.payload_name: check_rows(rows).astype(np.float16)}

    def decode(self, payload: Mapping[str, np.ndarray]) -> np.ndarray:
        return payload[self.payload_name]

    def parameters(self) -> dict[str, np.ndarray]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"name": self.name}

    def bytes_per_row(self, dim: int) -> int:
        return 2 * dim


@dataclass(frozen=True)
class Int8Codec:
    """int8 values with one float16 scale per row (``max |x| / 127``)."""

    name: str = "int8"

    def encode(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        rows = check_rows(rows)
        scale = np.abs(rows).max(axis=1) / 127.0
        safe = np.where(scale == 0, 1.0, scale)
        values = np.clip(np.rint(rows / safe[:, None]), -127, 127).astype(np.int8)
        return {"values": values, "scales": scale.astype(np.float16)}

    def decode(self, payload: Mapping[str, np.ndarray]) -> np.ndarray:
        values = np.asarray(payload["values"], dtype=np.float32)
        return _unit(values * np.asarray(payload["scales"], dtype=np.float32)[:, None])

    def parameters(self) -> dict[str, np.ndarray]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"name": self.name}

    def bytes_per_row(self, dim: int) -> int:
        return dim + 2


def _lookup(bits: int) -> np.ndarray:
    """``(256, 8 // bits)``: the bucket values packed into each byte, lowest bits first."""
    per_byte = 8 // bits
    mask = (1 << bits) - 1
    byte = np.arange(256, dtype=np.uint16)[:, None]
    shifts = (np.arange(per_byte, dtype=np.uint16) * bits)[None, :]
    return ((byte >> shifts) & mask).astype(np.uint8)


@dataclass(frozen=True, eq=False)
class ResidualCodec:
    """Nearest centroid (uint16) plus a ``bits``-bit bucket per dimension of the residual.

    ``centroids`` ``(K, D)``; ``cutoffs`` ``(2^bits - 1, D)``: per-dimension bucket edges;
    ``weights`` ``(2^bits, D)``: the value each bucket decodes to. Build it with
    :func:`fit_codec`.
    """

    bits: int
    centroids: np.ndarray
    cutoffs: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        if self.bits not in (2, 4):
            raise ValueError(f"bits must be 2 or 4, got {self.bits!r}")
        k, dim = self.centroids.shape
        if not 1 <= k <= 65536:
            raise ValueError(f"a residual codec holds 1 to 65536 centroids, got {k}")
        levels = 1 << self.bits
        if self.cutoffs.shape != (levels - 1, dim) or self.weights.shape != (levels, dim):
            raise ValueError(
                f"cutoffs {self.cutoffs.shape} and weights {self.weights.shape} do not fit "
                f"{self.bits} bits and dimension {dim}"
            )
        if (dim * self.bits) % 8:
            raise ValueError(f"dimension {dim} times {self.bits} bits is not whole bytes")
        if not all(np.isfinite(a).all() for a in (self.centroids, self.cutoffs, self.weights)):
            raise ValueError("the residual codec's parameters contain NaN or inf values")

    @property
    def name(self) -> str:
        return f"residual-{self.bits}bit"

    @property
    def dim(self) -> int:
        return int(self.centroids.shape[1])

    def encode(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        import faiss

        rows = check_rows(rows, self.dim)
        index = faiss.IndexFlatL2(self.dim)
        index.add(np.ascontiguousarray(self.centroids, dtype=np.float32))
        ids = np.empty(len(rows), dtype=np.uint16)
        packed = np.empty((len(rows), self.dim * self.bits // 8), dtype=np.uint8)
        per_byte = 8 // self.bits
        shifts = (np.arange(per_byte, dtype=np.uint8) * self.bits)[None, None, :]
        for lo in range(0, len(rows), _CHUNK):
            chunk = rows[lo : lo + _CHUNK]
            _, nearest = index.search(chunk, 1)
            residual = chunk - self.centroids[nearest[:, 0]]
            buckets = np.zeros(residual.shape, dtype=np.uint8)
            for edge in self.cutoffs:  # bucket = how many edges the value lies above
                buckets += residual > edge
            grouped = buckets.reshape(len(chunk), -1, per_byte) << shifts
            packed[lo : lo + _CHUNK] = np.bitwise_or.reduce(grouped, axis=2)
            ids[lo : lo + _CHUNK] = nearest[:, 0]
        return {"centroid": ids, "residual": packed}

    def decode(self, payload: Mapping[str, np.ndarray]) -> np.ndarray:
        ids = np.asarray(payload["centroid"], dtype=np.intp)
        packed = np.asarray(payload["residual"])
        buckets = _lookup(self.bits)[packed].reshape(len(ids), self.dim)
        residual = np.take_along_axis(self.weights, buckets.astype(np.intp), axis=0)
        return _unit(self.centroids[ids] + residual)

    def parameters(self) -> dict[str, np.ndarray]:
        """Centroids saved as float16 (they are fitted at that precision), the rest float32."""
        return {
            "centroids": self.centroids.astype(np.float16),
            "cutoffs": self.cutoffs,
            "weights": self.weights,
        }

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "bits": self.bits, "centroids": len(self.centroids)}

    def bytes_per_row(self, dim: int) -> int:
        return 2 + dim * self.bits // 8


def auto_centroids(n_rows: int) -> int:
    """The centroid count for ``n_rows`` rows: the power of two nearest ``4·√n``, clipped to
    16 .. 16,384 and to ``n_rows``.

    >>> auto_centroids(200_000), auto_centroids(2_000), auto_centroids(10)
    (2048, 128, 10)
    """
    if n_rows < 1:
        raise ValueError(f"n_rows must be positive, got {n_rows}")
    k = 1 << max(0, round(math.log2(4 * math.sqrt(n_rows))))
    return int(min(max(k, 16), 16384, n_rows))


def _fit_residual(
    rows: np.ndarray, bits: int, *, seed: int, centroids: int | None, sample: int
) -> ResidualCodec:
    import faiss

    rng = np.random.default_rng(seed)
    if len(rows) > sample:
        rows = rows[np.sort(rng.choice(len(rows), sample, replace=False))]
    k = centroids or auto_centroids(len(rows))
    if not 1 <= k <= min(65536, len(rows)):
        raise ValueError(f"centroids must lie in 1 .. {min(65536, len(rows))}, got {k}")
    kmeans = faiss.Kmeans(
        rows.shape[1],
        k,
        niter=10,
        seed=seed,
        max_points_per_centroid=64,
        min_points_per_centroid=1,  # a small store: few rows a centroid is fine, no warning
        verbose=False,
    )
    kmeans.train(np.ascontiguousarray(rows))
    found = np.asarray(kmeans.centroids, dtype=np.float16).astype(np.float32)  # as saved
    _, nearest = kmeans.index.search(rows, 1)
    residual = rows - found[nearest[:, 0]]
    levels = 1 << bits
    cutoffs = np.quantile(residual, np.arange(1, levels) / levels, axis=0).astype(np.float32)
    weights = np.quantile(residual, (np.arange(levels) + 0.5) / levels, axis=0)
    return ResidualCodec(bits, found, cutoffs, weights.astype(np.float32))


SAMPLE_ROWS = 200_000
"""At most this many rows (a seeded sample) fit a residual codec's centroids and buckets."""


def fit_codec(
    name: str,
    rows: np.ndarray,
    *,
    seed: int = 0,
    centroids: int | None = None,
    sample: int = SAMPLE_ROWS,
) -> TokenCodec:
    """The codec ``name`` (one of :data:`CODEC_NAMES`) fitted on float32 unit ``rows``.

    ``centroids`` (residual codecs): the k-means centroid count, default
    :func:`auto_centroids` of the sample size; ``sample``: rows used to fit.
    Raises ``ValueError`` for an unknown name, no rows or NaN/inf rows.
    """
    check_choice(name, "codec", CODEC_NAMES)
    rows = check_rows(rows)
    if not len(rows):
        raise ValueError("no token rows to fit a codec on")
    if name == "float16":
        return Float16Codec()
    if name == "int8":
        return Int8Codec()
    bits = int(name.split("-")[1].removesuffix("bit"))
    return _fit_residual(rows, bits, seed=seed, centroids=centroids, sample=sample)


def load_codec(config: Mapping[str, Any], parameters: Callable[[str], np.ndarray]) -> TokenCodec:
    """The codec a store's ``config`` names, reading its fitted arrays through
    ``parameters(name)``; ``ValueError`` for an unknown codec or parameters that do not fit."""
    name = config.get("name")
    check_choice(name, "codec", CODEC_NAMES)
    if name == "float16":
        return Float16Codec()
    if name == "int8":
        return Int8Codec()
    return ResidualCodec(
        int(config["bits"]),
        np.asarray(parameters("centroids"), dtype=np.float32),
        np.asarray(parameters("cutoffs"), dtype=np.float32),
        np.asarray(parameters("weights"), dtype=np.float32),
    )
