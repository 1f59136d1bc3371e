"""Array forms of strings and string-keyed postings: what an index segment is made of.

- **String column**: many strings as one UTF-8 byte array plus ``int64`` offsets
  (:func:`pack_strings`, :func:`unpack_string`); memory-mapped, nothing is decoded until read.
- **Keyed postings**: string keys → lists of values, as a sorted ``uint64`` array of key
  hashes, ``int64`` pointers and the values (:func:`build_postings`, :func:`lookup`); a
  look-up is one binary search over a memory map, whatever the number of keys. Keys are
  hashed with 64-bit BLAKE2b (:func:`key_hashes`): two of a million keys collide with
  probability about 3e-8; where a wrong match would matter (passage ids) the caller checks
  the stored string.

Example:
    >>> table = build_postings(key_hashes(["paris", "rome", "paris"]), np.array([4, 7, 9]))
    >>> lookup(table, key_hash("paris")).tolist(), lookup(table, key_hash("oslo")).tolist()
    ([4, 9], [])
    >>> blob, offsets = pack_strings(["Ada", "Édith"])
    >>> unpack_string(blob, offsets, 1)
    'Édith'
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1 << 19)
def key_hash(key: str) -> int:
    """The 64-bit BLAKE2b hash of ``key`` (stable across processes and machines; memoised:
    an index build hashes every word of every text, and texts repeat their words). A key
    with a lone surrogate (never stored: passages refuse it) hashes to bytes no UTF-8 key
    has, so looking it up finds nothing instead of failing."""
    data = key.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def key_hashes(keys: Iterable[str]) -> np.ndarray:
    """:func:`key_hash` of each key as a ``uint64`` array (each distinct key hashed once)."""
    return np.fromiter(map(key_hash, keys), dtype=np.uint64)


@dataclass(frozen=True, eq=False)
class Postings:
    """Keyed postings: ``values[pointers[i]:pointers[i + 1]]`` are the values of the key
    whose hash is ``hashes[i]`` (``hashes`` sorted, unique), in the order they were given."""

    hashes: np.ndarray
    pointers: np.ndarray
    values: np.ndarray

    @property
    def size(self) -> int:
        return int(self.hashes.shape[0])


def build_postings(hashes: np.ndarray, values: np.ndarray) -> Postings:
    """Group ``values`` by their key ``hashes`` (stable: each key's values keep their order)."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    if hashes.shape[0] != values.shape[0]:
        raise ValueError(f"got {hashes.shape[0]} key hashes for {values.shape[0]} values")
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    return Postings(*sorted_runs(sorted_hashes), values[order])


def sorted_runs(sorted_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a sorted array and the pointers to where each run starts
    (with the length appended): ``np.unique(..., return_index=True)`` without its sort."""
    starts = np.flatnonzero(
        np.concatenate([[True], sorted_hashes[1:] != sorted_hashes[:-1]])
        if len(sorted_hashes)
        else np.zeros(0, dtype=bool)
    )
    pointers = np.append(starts, len(sorted_hashes)).astype(np.int64)
    return sorted_hashes[starts], pointers


def lookup(table: Postings, hash_value: int) -> np.ndarray:
    """The values of the key with hash ``hash_value`` (empty when absent)."""
    h = np.uint64(hash_value)
    i = int(np.searchsorted(table.hashes, h))
    if i >= table.size or table.hashes[i] != h:
        return table.values[:0]
    return table.values[table.pointers[i] : table.pointers[i + 1]]


def contains(hashes: np.ndarray, hash_value: int) -> bool:
    """Whether the sorted ``uint64`` array ``hashes`` holds ``hash_value``."""
    h = np.uint64(hash_value)
    i = int(np.searchsorted(hashes, h))
    return i < hashes.shape[0] and bool(hashes[i] == h)


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(uint8 UTF-8 bytes, int64 offsets)`` of ``strings`` (``len + 1`` offsets)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def unpack_string(blob: np.ndarray, offsets: np.ndarray, i: int) -> str:
    """String ``i`` of a column made by :func:`pack_strings`."""
    return bytes(blob[offsets[i] : offsets[i + 1]]).decode("utf-8")


def unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Every string of a column, in order (one decode of the whole byte array)."""
    data = bytes(blob)
    bounds = offsets.tolist()
    return [data[a:b].decode("utf-8") for a, b in itertools.pairwise(bounds)]


def gather_csr(pointers: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR ``pointers`` and selected ``rows``: the new pointers of those rows' slices laid
    end to end, and the positions of their entries in the source (vectorised, no loop).

    >>> gather_csr(np.array([0, 2, 2, 5]), np.array([2, 0]))
    (array([0, 3, 5]), array([2, 3, 4, 0, 1]))
    """
    starts = pointers[rows]
    lengths = pointers[rows + 1] - starts
    new_pointers = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_pointers[1:])
    total = int(new_pointers[-1])
    positions = np.arange(total, dtype=np.int64) - np.repeat(new_pointers[:-1] - starts, lengths)
    return new_pointers, positions
