"""Precomputed passage token states for RaLa: packed float16, punctuation dropped, saved safely.

:class:`PassageStates` holds, for a set of passages, the :class:`~rag_multihop.coop.states.
TokenStates` of one :class:`~rag_multihop.coop.states.StateLayout`, packed into one float16
array per kind (token vectors of all passages end to end, with offsets; pooled vectors one
row per passage). RaLa reads a candidate's states from here instead of running the encoder
at query time; :attr:`PassageStates.nbytes` / :attr:`bytes_per_passage` give its memory.

A store knows the model whose states it holds: :meth:`PassageStates.build` records the
encoder's :attr:`~PassageStates.fingerprint` (the mean token states of fixed probe texts at
the scoring layer, :class:`~rag_multihop.coop.states.LayerEncoder`), and
:class:`~rag_multihop.coop.rala.RaLaReranker` refuses a store whose fingerprint its encoder
does not reproduce. Passage ids are unique: a store never serves one passage's states under
another's id.

Saved as a folder (``config.json`` with the kind, format version, encoder name, dimension,
layout, the passage ids and the fingerprint's ``probe_texts``; ``tokens.npy``,
``offsets.npy``, ``pooled.npy``, ``token_ids.npy``, ``id_offsets.npy`` and
``encoder_fingerprint.npy``), written atomically (:mod:`rag_multihop._atomic`);
:meth:`PassageStates.load` refuses files that disagree and duplicate ids. Stores saved before
fingerprints were recorded load without one; the reranker then compares encoder names and
warns.

Example (a toy encoder of two layers):
    >>> import tempfile
    >>> vectors = np.ones((1, 3, 2), "float32") / np.sqrt(2)
    >>> states = [TokenStates(vectors, np.zeros((0, 2), "float32"), np.array([1, 5, 2], "int32"))]
    >>> store = PassageStates(["p1"], states, StateLayout((2,)), encoder_name="toy")
    >>> folder = tempfile.mkdtemp()
    >>> store.save(folder)
    >>> PassageStates.load(folder).get(["p1"])[0].tokens.shape, store.bytes_per_passage
    ((1, 3, 2), 56.0)
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
from rag_multihop.coop.states import HiddenStateEncoder, LayerEncoder, StateLayout, TokenStates
from rag_multihop.encoders.fingerprint import EncoderFingerprint
from rag_multihop.types import Passage

logger = logging.getLogger(__name__)

KIND = "rag_multihop.passage_states"
FORMAT_VERSION = 1
FINGERPRINT_FILE = "encoder_fingerprint.npy"
STORE_DTYPE = np.float16


class PassageStates:
    """Token states of passages by id, packed as float16 (see the module docstring)."""

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
        self._assign(
            ids,
            np.concatenate([s.tokens for s in states], axis=1).astype(STORE_DTYPE),
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            np.stack([s.pooled for s in states]).astype(STORE_DTYPE),
            np.concatenate([s.ids for s in states]).astype(np.int32),
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
        tokens: np.ndarray,
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
        self.tokens = tokens  # (token layers, all kept tokens, D)
        self.offsets = offsets  # (passages + 1,)
        self.pooled = pooled  # (passages, pooled layers, D)
        self.token_ids = token_ids  # (all tokens before dropping,) int32
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
    ) -> PassageStates:
        """Encode every passage (``title + "\\n" + text``) once and pack the states, with
        the encoder's fingerprint at the scoring layer (``layout.token_layers[0]``).

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
        )

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, pid: object) -> bool:
        return pid in self._row

    @property
    def dim(self) -> int:
        return int(self.tokens.shape[-1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (vectors, token ids and offsets)."""
        return int(
            self.tokens.nbytes
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
        """The states of ``ids`` (float16 views), ``None`` for passages not stored."""
        out: list[TokenStates | None] = []
        for pid in ids:
            row = self._row.get(pid)
            if row is None:
                out.append(None)
                continue
            lo, hi = self.offsets[row], self.offsets[row + 1]
            first, last = self.id_offsets[row], self.id_offsets[row + 1]
            out.append(
                TokenStates(self.tokens[:, lo:hi], self.pooled[row], self.token_ids[first:last])
            )
        return out

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the store atomically into ``directory`` (see the module docstring)."""
        with atomic_directory(directory) as staging:
            np.save(staging / "tokens.npy", self.tokens)
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
                "dtype": str(np.dtype(STORE_DTYPE)),
                "ids": self.ids,
            }
            if self.fingerprint is not None:
                config["probe_texts"] = list(self.fingerprint.texts)
                np.save(staging / FINGERPRINT_FILE, self.fingerprint.vectors)
            write_config(staging, KIND, FORMAT_VERSION, config, indent=None)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, mmap: bool = False) -> PassageStates:
        """Read a store written by :meth:`save` (``mmap=True`` maps the token array from disk).

        Files that are missing, corrupt or inconsistent, and duplicate passage ids, raise
        :class:`~rag_multihop._atomic.ArtifactError` naming the file.
        """
        with read_artifact(directory) as source:
            return cls._read(source, mmap)

    @classmethod
    def _read(cls, source: Path, mmap: bool) -> PassageStates:
        config_path = source / "config.json"
        config = read_config(
            source, KIND, (FORMAT_VERSION,), label="PassageStates", kindless=True
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
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{config_path} is not a valid PassageStates config: {exc}"
            ) from None
        arrays = {}
        for name in ("tokens", "offsets", "pooled", "token_ids", "id_offsets"):
            path = source / f"{name}.npy"
            arrays[name] = _load_array(path, mmap and name == "tokens")
        _check_arrays(source, arrays, len(ids), layout, config.get("dim"))
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
            arrays["tokens"],
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
        return store


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
    source: Path, arrays: dict[str, np.ndarray], n: int, layout: StateLayout, dim: object
) -> None:
    tokens, offsets, pooled = arrays["tokens"], arrays["offsets"], arrays["pooled"]
    problems = []
    if tokens.ndim != 3 or tokens.shape[0] != len(layout.token_layers) or tokens.shape[2] != dim:
        problems.append(f"tokens.npy has shape {tokens.shape}")
    if (
        offsets.ndim != 1
        or len(offsets) != n + 1
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
    ):
        problems.append(f"offsets.npy does not index {n} passages")
    elif tokens.ndim == 3 and offsets[-1] != tokens.shape[1]:
        problems.append(f"offsets.npy ends at {offsets[-1]}, tokens.npy holds {tokens.shape[1]}")
    if pooled.ndim != 3 or pooled.shape[:2] != (n, len(layout.pooled_layers)):
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
