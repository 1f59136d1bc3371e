"""Precomputed passage token states for RaLa: packed by a codec, punctuation dropped, saved.

:class:`PassageStates` holds, for a set of passages, the :class:`~rag_multihop.coop.states.
TokenStates` of one :class:`~rag_multihop.coop.states.StateLayout`: the token vectors of all
passages end to end (with offsets), packed by a codec (:mod:`rag_multihop.coop.codecs`:
float16 by default, 768 bytes a MiniLM token; ``codec="residual-2bit"``, a centroid id and 2
bits a dimension, about 98 bytes a token), and the pooled vectors as float16, one row
per passage. RaLa reads a candidate's states from here (decoded to unit float rows)
instead of running the encoder at query time; :attr:`PassageStates.nbytes` /
:attr:`bytes_per_passage` give its memory, :meth:`PassageStates.recode` repacks a store
with another codec.

A store knows the model whose states it holds: :meth:`PassageStates.build` records the
encoder's :attr:`~PassageStates.fingerprint` (the mean token states of fixed probe texts at
the scoring layer, :class:`~rag_multihop.coop.states.LayerEncoder`), and
:class:`~rag_multihop.coop.rala.RaLaReranker` refuses a store whose fingerprint its encoder
does not reproduce. Passage ids are unique: a store never serves one passage's states under
another's id.

Saved as a folder (``config.json`` with the kind, format version 2, encoder name, dimension,
layout, the codec and its payload arrays, the passage ids and the fingerprint's
``probe_texts``; one ``.npy`` per payload array (``tokens.npy`` for float16,
``centroid.npy`` + ``residual.npy`` for a residual codec, ...), ``codec.<name>.npy`` for the
codec's fitted arrays, ``offsets.npy``, ``pooled.npy``, ``token_ids.npy``, ``id_offsets.npy``
and ``encoder_fingerprint.npy``), written atomically (:mod:`rag_multihop._atomic`);
:meth:`PassageStates.load` (``mmap=True`` maps the payload from disk) refuses files that
disagree and duplicate ids. Stores of format version 1 (float16 tokens, before codecs) load
as ``float16`` stores; stores saved before fingerprints were recorded load without one; the
reranker then compares encoder names and warns.

Example (a toy encoder of two layers):
    >>> import tempfile
    >>> vectors = np.ones((1, 3, 2), "float32") / np.sqrt(2)
    >>> states = [TokenStates(vectors, np.zeros((0, 2), "float32"), np.array([1, 5, 2], "int32"))]
    >>> store = PassageStates(
    ...     ["p1"], states, StateLayout((2,)), encoder_name="toy", codec="float16"
    ... )
    >>> folder = tempfile.mkdtemp()
    >>> store.save(folder)
    >>> PassageStates.load(folder).get(["p1"])[0].tokens.shape, store.bytes_per_passage
    ((1, 3, 2), 50.0)
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._artifact_config import read_config, write_config
from rag_multihop._atomic import ArtifactError, atomic_directory, read_artifact
from rag_multihop.coop.codecs import (
    DEFAULT_CODEC,
    LEGACY_CODEC,
    TokenCodec,
    fit_codec,
    load_codec,
)
from rag_multihop.coop.states import HiddenStateEncoder, LayerEncoder, StateLayout, TokenStates
from rag_multihop.encoders.fingerprint import EncoderFingerprint
from rag_multihop.types import Passage

logger = logging.getLogger(__name__)

KIND = "rag_multihop.passage_states"
FORMAT_VERSION = 2
"""2: a codec packs the token vectors (1: float16 ``tokens.npy``, still read)."""
FINGERPRINT_FILE = "encoder_fingerprint.npy"
POOLED_DTYPE = np.float16


class PassageStates:
    """Token states of passages by id, packed by a codec (see the module docstring).

    ``codec``: a name of :data:`~rag_multihop.coop.codecs.CODEC_NAMES` (fitted on these
    states with ``seed``) or a fitted :class:`~rag_multihop.coop.codecs.TokenCodec`.
    """

    def __init__(
        self,
        ids: Sequence[str],
        states: Sequence[TokenStates],
        layout: StateLayout,
        *,
        encoder_name: str,
        pooling: str = "mean",
        drop_punctuation: bool = True,
        fingerprint: EncoderFingerprint | None = None,
        codec: str | TokenCodec = DEFAULT_CODEC,
        seed: int = 0,
    ) -> None:
        ids = list(ids)
        if len(ids) != len(states):
            raise ValueError(f"{len(ids)} ids for {len(states)} token states")
        _check_unique(ids, "passage ids")
        if not states:
            raise ValueError("no passages to store")
        n_token, n_pooled = len(layout.token_layers), len(layout.pooled_layers)
        dims = {s.tokens.shape[-1] for s in states}
        if len(dims) != 1:
            raise ValueError(f"token states of different dimensions: {sorted(dims)}")
        if fingerprint is not None and fingerprint.dim not in dims:
            raise ValueError(
                f"the fingerprint has dimension {fingerprint.dim}, the token states {dims.pop()}"
            )
        for pid, s in zip(ids, states, strict=True):
            if s.tokens.shape[0] != n_token or s.pooled.shape[0] != n_pooled:
                raise ValueError(
                    f"passage {pid!r}: states of {s.tokens.shape[0]} token and "
                    f"{s.pooled.shape[0]} pooled layers, the layout has {n_token} and {n_pooled}"
                )
        lengths = np.array([s.n_tokens for s in states], dtype=np.int64)
        id_lengths = np.array([len(s.ids) for s in states], dtype=np.int64)
        tokens = np.concatenate([np.asarray(s.tokens, np.float32) for s in states], axis=1)
        codec, payload = _pack(tokens, codec, seed)
        self._assign(
            ids,
            codec,
            payload,
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            np.stack([s.pooled for s in states]).astype(POOLED_DTYPE),
            _compact_ids(np.concatenate([s.ids for s in states])),
            np.concatenate([[0], np.cumsum(id_lengths)]).astype(np.int64),
            layout,
            encoder_name,
            pooling,
            drop_punctuation,
            fingerprint,
        )

    def _assign(
        self,
        ids: list[str],
        codec: TokenCodec,
        payload: dict[str, np.ndarray],
        offsets: np.ndarray,
        pooled: np.ndarray,
        token_ids: np.ndarray,
        id_offsets: np.ndarray,
        layout: StateLayout,
        encoder_name: str,
        pooling: str,
        drop_punctuation: bool,
        fingerprint: EncoderFingerprint | None,
    ) -> None:
        self.ids = ids
        self.codec = codec
        """How the token vectors are packed (:mod:`rag_multihop.coop.codecs`)."""
        self.payload = payload  # name -> (token layers, all kept tokens, ...)
        self.offsets = offsets  # (passages + 1,)
        self.pooled = pooled  # (passages, pooled layers, D)
        self.token_ids = token_ids  # (all tokens before dropping,) uint16 or int32
        self.id_offsets = id_offsets  # (passages + 1,)
        self.layout = layout
        self.encoder_name = encoder_name
        self.pooling = pooling
        self.drop_punctuation = drop_punctuation
        self.fingerprint = fingerprint
        """The encoder's fingerprint at the scoring layer (``None``: a store saved before
        fingerprints were recorded)."""
        self._row = {pid: i for i, pid in enumerate(ids)}

    @classmethod
    def build(
        cls,
        passages: Sequence[Passage],
        encoder: HiddenStateEncoder,
        layout: StateLayout,
        *,
        pooling: str | None = None,
        drop_punctuation: bool = True,
        show_progress: bool = False,
        codec: str = DEFAULT_CODEC,
    ) -> PassageStates:
        """Encode every passage (``title + "\\n" + text``) once and pack the states with
        ``codec``, with the encoder's fingerprint at the scoring layer
        (``layout.token_layers[0]``).

        Raises ``ValueError`` for no passages or duplicate passage ids (naming them).
        """
        if not passages:
            raise ValueError("no passages to store")
        _check_unique([p.id for p in passages], "passage ids")
        pooling = pooling or encoder.pooling
        states = encoder.encode(
            [p.embedding_text for p in passages],
            layout,
            drop_punctuation=drop_punctuation,
            pooling=pooling,
            show_progress=show_progress,
        )
        return cls(
            [p.id for p in passages],
            states,
            layout,
            encoder_name=encoder.name,
            pooling=pooling,
            drop_punctuation=drop_punctuation,
            fingerprint=EncoderFingerprint.of(LayerEncoder(encoder, layout.token_layers[0])),
            codec=codec,
        )

    def recode(self, codec: str | TokenCodec, *, seed: int = 0) -> PassageStates:
        """The same states packed with another ``codec`` (a name fits it on these states);
        e.g. ``PassageStates.load(old).recode("residual-2bit").save(new)`` compresses a
        float16 store without running the encoder."""
        n_layers = len(self.layout.token_layers)
        rows = self._decode(self.payload, n_layers).astype(np.float32)
        packed_codec, payload = _pack(rows, codec, seed)
        store = PassageStates.__new__(PassageStates)
        store._assign(
            list(self.ids),
            packed_codec,
            payload,
            self.offsets,
            self.pooled,
            self.token_ids,
            self.id_offsets,
            self.layout,
            self.encoder_name,
            self.pooling,
            self.drop_punctuation,
            self.fingerprint,
        )
        return store

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, pid: object) -> bool:
        return pid in self._row

    @property
    def dim(self) -> int:
        return int(self.pooled.shape[-1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (packed vectors, the codec's fitted arrays, token ids and
        offsets)."""
        return int(
            sum(a.nbytes for a in self.payload.values())
            + sum(a.nbytes for a in self.codec.parameters().values())
            + self.pooled.nbytes
            + self.offsets.nbytes
            + self.token_ids.nbytes
            + self.id_offsets.nbytes
        )

    @property
    def bytes_per_passage(self) -> float:
        return self.nbytes / len(self.ids)

    @property
    def mean_tokens(self) -> float:
        """Stored tokens per passage (after punctuation was dropped)."""
        return float(self.offsets[-1]) / len(self.ids)

    def get(self, ids: Sequence[str]) -> list[TokenStates | None]:
        """The states of ``ids`` (token rows decoded by the codec, in one batch), ``None``
        for passages not stored."""
        rows = [self._row.get(pid) for pid in ids]
        found = [r for r in rows if r is not None]
        if not found:
            return [None] * len(rows)
        spans = [(int(self.offsets[r]), int(self.offsets[r + 1])) for r in found]
        pieces = {
            name: np.concatenate([array[:, lo:hi] for lo, hi in spans], axis=1)
            for name, array in self.payload.items()
        }
        tokens = self._decode(pieces, len(self.layout.token_layers))
        start = 0
        by_row: dict[int, TokenStates] = {}
        for row, (lo, hi) in zip(found, spans, strict=True):
            first, last = self.id_offsets[row], self.id_offsets[row + 1]
            by_row[row] = TokenStates(
                tokens[:, start : start + hi - lo],
                self.pooled[row],
                np.asarray(self.token_ids[first:last], dtype=np.int32),
            )
            start += hi - lo
        return [None if r is None else by_row[r] for r in rows]

    def _decode(self, payload: dict[str, np.ndarray], n_layers: int) -> np.ndarray:
        """``(layers, tokens, D)`` rows from payload arrays of ``(layers, tokens, ...)``."""
        n = next(iter(payload.values())).shape[1]
        flat = {k: v.reshape(n_layers * n, *v.shape[2:]) for k, v in payload.items()}
        return self.codec.decode(flat).reshape(n_layers, n, -1)

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the store atomically into ``directory`` (see the module docstring)."""
        with atomic_directory(directory) as staging:
            for name, array in self.payload.items():
                np.save(staging / f"{name}.npy", array)
            for name, array in self.codec.parameters().items():
                np.save(staging / f"codec.{name}.npy", array)
            np.save(staging / "offsets.npy", self.offsets)
            np.save(staging / "pooled.npy", self.pooled)
            np.save(staging / "token_ids.npy", self.token_ids)
            np.save(staging / "id_offsets.npy", self.id_offsets)
            config: dict[str, Any] = {
                "encoder": self.encoder_name,
                "dim": self.dim,
                "token_layers": list(self.layout.token_layers),
                "pooled_layers": list(self.layout.pooled_layers),
                "pooling": self.pooling,
                "drop_punctuation": self.drop_punctuation,
                "codec": self.codec.config(),
                "payload": sorted(self.payload),
                "ids": self.ids,
            }
            if self.fingerprint is not None:
                config["probe_texts"] = list(self.fingerprint.texts)
                np.save(staging / FINGERPRINT_FILE, self.fingerprint.vectors)
            write_config(staging, KIND, FORMAT_VERSION, config, indent=None)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, mmap: bool = False) -> PassageStates:
        """Read a store written by :meth:`save` (``mmap=True`` maps the payload from disk).

        Files that are missing, corrupt or inconsistent, and duplicate passage ids, raise
        :class:`~rag_multihop._atomic.ArtifactError` naming the file.
        """
        with read_artifact(directory) as source:
            return cls._read(source, mmap)

    @classmethod
    def _read(cls, source: Path, mmap: bool) -> PassageStates:
        config_path = source / "config.json"
        config = read_config(
            source, KIND, (1, FORMAT_VERSION), label="PassageStates", kindless=True
        )  # kindless: stores saved before kinds were recorded
        try:
            layout = StateLayout(tuple(config["token_layers"]), tuple(config["pooled_layers"]))
            ids = config["ids"]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ValueError("ids must be a list of strings")
            _check_unique(ids, "ids")
            encoder, pooling = str(config["encoder"]), str(config["pooling"])
            drop = bool(config["drop_punctuation"])
            texts = config.get("probe_texts")
            if texts is not None and (
                not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts)
            ):
                raise ValueError("probe_texts must be a list of non-empty strings")
            codec, names = _saved_codec(source, config)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{config_path} is not a valid PassageStates config: {exc}"
            ) from None
        payload = {name: _load_array(source / f"{name}.npy", mmap) for name in names}
        arrays = {}
        for name in ("offsets", "pooled", "token_ids", "id_offsets"):
            arrays[name] = _load_array(source / f"{name}.npy", False)
        _check_arrays(source, payload, arrays, len(ids), layout, config.get("dim"))
        fingerprint = None
        if texts is not None:
            path = source / FINGERPRINT_FILE
            try:
                fingerprint = EncoderFingerprint(tuple(texts), _load_array(path, False))
            except ValueError as exc:
                raise ArtifactError(
                    f"{path} is not the fingerprint {config_path.name} names: {exc}"
                ) from None
            if fingerprint.dim != config.get("dim"):
                raise ArtifactError(
                    f"{path} has dimension {fingerprint.dim}, {config_path.name} says "
                    f"{config.get('dim')!r}"
                )
        store = cls.__new__(cls)
        store._assign(
            ids,
            codec,
            payload,
            arrays["offsets"],
            arrays["pooled"],
            arrays["token_ids"],
            arrays["id_offsets"],
            layout,
            encoder,
            pooling,
            drop,
            fingerprint,
        )
        _check_decodes(source, store)
        return store


def _pack(
    tokens: np.ndarray, codec: str | TokenCodec, seed: int
) -> tuple[TokenCodec, dict[str, np.ndarray]]:
    """``codec`` (fitted on ``tokens`` when given by name) and its payload of ``tokens``
    ``(layers, T, D)``, each array shaped ``(layers, T, ...)``."""
    n_layers, n, dim = tokens.shape
    rows = tokens.reshape(n_layers * n, dim)
    fitted = fit_codec(codec, rows, seed=seed) if isinstance(codec, str) else codec
    payload = fitted.encode(rows)
    return fitted, {k: v.reshape(n_layers, n, *v.shape[1:]) for k, v in payload.items()}


def _compact_ids(token_ids: np.ndarray) -> np.ndarray:
    """Tokenizer ids as uint16 when they fit (every BERT-sized vocabulary), else int32."""
    token_ids = np.asarray(token_ids)
    if len(token_ids) and (token_ids.min() < 0 or token_ids.max() > np.iinfo(np.uint16).max):
        return token_ids.astype(np.int32)
    return token_ids.astype(np.uint16)


def _saved_codec(source: Path, config: dict[str, Any]) -> tuple[TokenCodec, list[str]]:
    """The codec a config names and its payload files (format 1: float16 ``tokens``)."""
    if config.get("format_version", 1) == 1:
        return load_codec({"name": LEGACY_CODEC}, lambda name: np.zeros(0)), ["tokens"]
    names = config["payload"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError("payload must be a non-empty list of array names")

    def parameter(name: str) -> np.ndarray:
        path = source / f"codec.{name}.npy"
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{path.name} is not a readable array: {exc}") from None

    return load_codec(config["codec"], parameter), names


def _check_decodes(source: Path, store: PassageStates) -> None:
    """``ArtifactError`` unless the first passage's payload decodes to its rows."""
    try:
        [first] = store.get(store.ids[:1])
    except (ValueError, IndexError, KeyError) as exc:
        raise ArtifactError(
            f"{source}: the token payload does not decode with codec {store.codec.name!r}: {exc}"
        ) from None
    if first is not None and first.tokens.shape[-1] != store.dim:
        raise ArtifactError(
            f"{source}: codec {store.codec.name!r} decodes rows of dimension "
            f"{first.tokens.shape[-1]}, the store has {store.dim}"
        )


def _check_unique(ids: Sequence[str], what: str) -> None:
    """``ValueError`` naming the ids that occur more than once."""
    repeated = [pid for pid, count in Counter(ids).items() if count > 1]
    if repeated:
        raise ValueError(
            f"{what} must be unique: {len(repeated)} repeated, e.g. {repeated[:5]} (one "
            "passage's states would be served under another's id)"
        )


def _load_array(path: Path, mmap: bool) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ArtifactError(f"{path} is not a readable array: {exc}") from None


def _check_arrays(
    source: Path,
    payload: dict[str, np.ndarray],
    arrays: dict[str, np.ndarray],
    n: int,
    layout: StateLayout,
    dim: object,
) -> None:
    offsets, pooled = arrays["offsets"], arrays["pooled"]
    problems = []
    lengths = set()
    for name, array in payload.items():
        if array.ndim < 2 or array.shape[0] != len(layout.token_layers):
            problems.append(f"{name}.npy has shape {array.shape}")
        else:
            lengths.add(array.shape[1])
    if "tokens" in payload and payload["tokens"].shape[-1] != dim:
        problems.append(f"tokens.npy has shape {payload['tokens'].shape}")
    if len(lengths) > 1:
        problems.append(f"the payload arrays hold {sorted(lengths)} tokens")
    if (
        offsets.ndim != 1
        or len(offsets) != n + 1
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
    ):
        problems.append(f"offsets.npy does not index {n} passages")
    elif len(lengths) == 1 and offsets[-1] != next(iter(lengths)):
        problems.append(f"offsets.npy ends at {offsets[-1]}, the payload holds {lengths.pop()}")
    if (
        pooled.ndim != 3
        or pooled.shape[:2] != (n, len(layout.pooled_layers))
        or (pooled.shape[2] != dim)
    ):
        problems.append(f"pooled.npy has shape {pooled.shape}")
    token_ids, id_offsets = arrays["token_ids"], arrays["id_offsets"]
    if (
        token_ids.ndim != 1
        or id_offsets.ndim != 1
        or len(id_offsets) != n + 1
        or id_offsets[0] != 0
        or np.any(np.diff(id_offsets) < 0)
        or id_offsets[-1] != len(token_ids)
    ):
        problems.append("token_ids.npy and id_offsets.npy do not index the passages")
    if problems:
        raise ArtifactError(
            f"{source}: the files do not belong together ({'; '.join(problems)}; config: "
            f"{n} passages, token layers {layout.token_layers}, pooled layers "
            f"{layout.pooled_layers}, dim {dim!r})"
        )
