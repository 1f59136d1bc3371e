"""A segment's passage texts, deflated one by one against a dictionary of their own words.

A string column (:func:`~rag_multihop.store.tables.pack_strings`) stores the texts as UTF-8,
about 420 bytes a passage on 2Wiki: the largest thing an index holds beside the vectors.
:func:`compress_texts` deflates each text on its own (raw deflate, so one text is read
without the others) with a preset dictionary: about 32 KiB of the segment's own texts,
taken evenly through it, so that a short text's common words are back-references from its
first byte. On 2Wiki a text falls from 424 to ~198 bytes (held out of the dictionary's
sample; 264 without a dictionary); reading one back costs a few microseconds.

Arrays: ``texts.z`` (the deflated texts end to end, ``uint8``), ``texts.zoff`` (``int64``
offsets, ``len + 1``) and ``texts.zdict`` (``uint8``). A segment whose texts total less
than :data:`MIN_BYTES` keeps the plain column (``texts.blob`` / ``texts.off``): a
one-passage write would spend more on the dictionary than it saves.

Example:
    >>> from rag_multihop.store.tables import pack_strings
    >>> texts = ["Rope is a 1948 film by Alfred Hitchcock."] * 3 + ["", "Café \\x00 ok"]
    >>> arrays = compress_texts(*pack_strings(texts), min_bytes=0)
    >>> sorted(arrays), text_at(arrays, 4), text_at(arrays, 3)
    (['texts.z', 'texts.zdict', 'texts.zoff'], 'Café \\x00 ok', '')
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

from rag_multihop.store.tables import unpack_string

MIN_BYTES = 256 * 1024
"""Texts of fewer bytes in all stay a plain column."""

DICTIONARY_BYTES = 32 * 1024
"""The preset dictionary's size (deflate looks back at most 32 KiB)."""

SAMPLE_TEXTS = 256
"""Texts the dictionary is taken from (evenly spaced through the segment)."""

PLAIN = ("texts.blob", "texts.off")

_WINDOW = -15  # raw deflate: no header or checksum per text


def compress_texts(
    blob: np.ndarray, offsets: np.ndarray, *, min_bytes: int | None = None
) -> dict[str, np.ndarray]:
    """The compressed arrays of the text column ``blob`` / ``offsets``, or the column itself
    (``texts.blob`` / ``texts.off``) when it holds fewer than ``min_bytes`` bytes
    (default :data:`MIN_BYTES`)."""
    bounds = np.asarray(offsets, dtype=np.int64)
    if int(bounds[-1]) < (MIN_BYTES if min_bytes is None else min_bytes):
        return {"texts.blob": blob, "texts.off": offsets}
    data = np.ascontiguousarray(blob, dtype=np.uint8).data  # a memory map: not copied
    dictionary = _dictionary(data, bounds)
    primed = zlib.compressobj(9, zlib.DEFLATED, _WINDOW, 9, zlib.Z_DEFAULT_STRATEGY, dictionary)
    deflated = bytearray()
    ends = np.zeros(len(bounds), dtype=np.int64)
    for i, (start, end) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        deflate = primed.copy()
        deflated += deflate.compress(data[start:end])
        deflated += deflate.flush()
        ends[i + 1] = len(deflated)
    return {
        "texts.z": np.frombuffer(deflated, dtype=np.uint8),
        "texts.zoff": ends,
        "texts.zdict": np.frombuffer(dictionary, dtype=np.uint8).copy(),
    }


def _dictionary(data: memoryview, bounds: np.ndarray) -> bytes:
    """Up to :data:`DICTIONARY_BYTES` of texts taken evenly through the column (the last
    bytes of a dictionary are the nearest back-references, so the sample is laid out in
    order and cut from its end)."""
    n = len(bounds) - 1
    chosen = np.unique(np.linspace(0, n - 1, min(n, SAMPLE_TEXTS)).astype(np.int64))
    sample = b" ".join(data[bounds[i] : bounds[i + 1]].tobytes() for i in chosen.tolist())
    return sample[-DICTIONARY_BYTES:]


def text_at(arrays: Mapping[str, np.ndarray], i: int) -> str:
    """Text ``i`` of a segment's arrays, compressed or plain."""
    if "texts.zdict" in arrays:
        z, offsets = arrays["texts.z"], arrays["texts.zoff"]
        inflate = zlib.decompressobj(_WINDOW, zdict=arrays["texts.zdict"].tobytes())
        data = inflate.decompress(bytes(z[offsets[i] : offsets[i + 1]])) + inflate.flush()
        return data.decode("utf-8")
    return unpack_string(arrays["texts.blob"], arrays["texts.off"], i)
