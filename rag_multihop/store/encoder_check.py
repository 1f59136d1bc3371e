"""Whether a query-time encoder is the model an index was built with, by fingerprint.

An index created with an ``encoder`` records that encoder's
:class:`~rag_multihop.encoders.fingerprint.EncoderFingerprint` in its manifest. Vectors of
another model rank nonsense against it without any error, so every caller that embeds
queries for an index (``MultiHopRetriever.from_index``, the store's dense and fusion
retrievers, ``CorpusIndex.encoder_matches`` for ``index add``) checks the encoder here
first. The fp32 and int8 MiniLM pass as one model (probe cosine ≥ 0.99); a different model
does not. An index without a recorded fingerprint only checks the dimension. The check runs
once per encoder object and fingerprint (remembered weakly), so reopening a snapshot for
every query costs nothing after the first.

Example:
    >>> class Toy:
    ...     name, dim = "toy", 2
    ...     def __init__(self, sign=1.0):
    ...         self.sign = sign
    ...     def encode(self, texts, *, show_progress=False):
    ...         return np.array([[self.sign * len(t), 1.0] for t in texts], "float32")
    >>> manifest = {"dim": 2, "encoder": recorded_fingerprint(Toy())}
    >>> check_index_encoder(manifest, Toy(), where="idx")
    >>> check_index_encoder(manifest, Toy(sign=-1.0), where="idx")
    Traceback (most recent call last):
    ...
    ValueError: encoder 'toy' is not the model the index idx was built with ('toy'): ...
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.fingerprint import FINGERPRINT_TOLERANCE, EncoderFingerprint

_ACCEPTED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""Encoder object → digests of the recorded fingerprints it has passed."""


def recorded_fingerprint(encoder: Encoder) -> dict[str, Any]:
    """The manifest's ``encoder`` entry for ``encoder``: its name, probe texts and vectors."""
    found = EncoderFingerprint.of(encoder)
    return {"name": encoder.name, "texts": list(found.texts), "vectors": found.vectors.tolist()}


def index_encoder_similarity(manifest: Mapping[str, Any], encoder: Encoder) -> float | None:
    """The lowest probe cosine between ``encoder`` and the index's recorded model (``None``
    when the index recorded none; ``-1.0`` for another dimension)."""
    recorded = manifest.get("encoder")
    if recorded is None:
        return None if encoder.dim == int(manifest["dim"]) else -1.0
    fingerprint = EncoderFingerprint(tuple(recorded["texts"]), np.array(recorded["vectors"]))
    return fingerprint.similarity(encoder)


def check_index_encoder(manifest: Mapping[str, Any], encoder: Encoder, *, where: object) -> None:
    """``ValueError`` naming both models unless ``encoder`` is the model of the index
    (``manifest``: its current manifest; ``where``: its path, for the message)."""
    recorded = manifest.get("encoder")
    digest = _digest(recorded)
    accepted = _accepted(encoder)
    if digest in accepted:
        return
    similarity = index_encoder_similarity(manifest, encoder)
    if similarity is not None and similarity < 1.0 - FINGERPRINT_TOLERANCE:
        if similarity == -1.0 and encoder.dim != int(manifest["dim"]):
            raise ValueError(
                f"encoder {encoder.name!r} has dimension {encoder.dim}; the index {where} "
                f"holds {manifest['dim']}-dimensional vectors"
            )
        built_with = "an unrecorded model" if recorded is None else repr(recorded.get("name"))
        raise ValueError(
            f"encoder {encoder.name!r} is not the model the index {where} was built with "
            f"({built_with}): lowest probe cosine {similarity:.4f} < "
            f"{1.0 - FINGERPRINT_TOLERANCE}; query it with that model, or rebuild the index "
            "with this one"
        )
    accepted.add(digest)


def _accepted(encoder: Encoder) -> set[str]:
    """The fingerprint digests ``encoder`` has passed (a fresh set, forgotten, for an
    encoder that cannot be weakly referenced: it is checked every time)."""
    try:
        return _ACCEPTED.setdefault(encoder, set())
    except TypeError:
        return set()


def _digest(recorded: Mapping[str, Any] | None) -> str:
    if recorded is None:
        return "none"
    vectors = np.ascontiguousarray(np.array(recorded["vectors"], dtype=np.float32))
    return hashlib.sha256(vectors.tobytes() + "\0".join(recorded["texts"]).encode()).hexdigest()
