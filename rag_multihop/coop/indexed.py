"""RaLa's passage token states as a sidecar of the persistent corpus index.

:class:`RaLaSidecar` writes them for a :class:`~rag_multihop.coop.rala.RaLaReranker`'s
layout and codec (its head: the codec's fitted arrays and the encoder's fingerprint at the
scoring layer; each part: the packed token rows, pooled rows and token ids of its passages,
the arrays a saved :class:`~rag_multihop.coop.store.PassageStates` holds). A residual codec
is fitted once, on the passages of the first attach, and packs every later write's states,
so parts concatenate and compaction copies packed bytes without decoding.
:class:`IndexedStates` serves a snapshot's states to a reranker in place of a
``PassageStates``; :func:`rala_from_index` makes that reranker.

Example:
    >>> index = CorpusIndex(path, sidecars=[RaLaSidecar(reranker)])  # doctest: +SKIP
    >>> index.attach_sidecar(RaLaSidecar(reranker))  # doctest: +SKIP
    >>> rala = rala_from_index(index.snapshot(), reranker.encoder)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop.coop.codecs import TokenCodec, load_codec
from rag_multihop.coop.states import LayerEncoder, StateLayout, TokenStates
from rag_multihop.coop.store import PassageStates
from rag_multihop.encoders.fingerprint import (
    FINGERPRINT_TOLERANCE,
    PROBE_TEXTS,
    EncoderFingerprint,
)
from rag_multihop.types import Passage

if TYPE_CHECKING:
    from rag_multihop.coop.rala import RaLaReranker
    from rag_multihop.store.sidecars import Sidecar
    from rag_multihop.store.snapshot import IndexSnapshot

KIND = "rala"
FINGERPRINT = "fingerprint"
CODEC_PREFIX = "codec."


class RaLaSidecar:
    """The ``rala`` sidecar producer of ``reranker`` (its encoder, layout, pooling,
    punctuation setting and codec). ``states``: precomputed states (a ``PassageStates`` of
    the same layout and encoder) used for the passages they hold instead of encoding them."""

    kind = KIND

    def __init__(self, reranker: RaLaReranker, *, states: PassageStates | None = None) -> None:
        self.reranker = reranker
        self.states = states
        if states is not None:
            reranker._check_store(states, reranker.layout)

    def identity(self) -> dict[str, Any]:
        reranker = self.reranker
        layout = reranker.layout
        return {
            "token_layers": list(layout.token_layers),
            "pooled_layers": list(layout.pooled_layers),
            "pooling": reranker.pooling,
            "drop_punctuation": reranker.settings.drop_punctuation,
            "codec": reranker.settings.codec,
            "dim": reranker.encoder.dim,
            "encoder": reranker.encoder.name,
        }

    def layout(self) -> dict[str, Any]:
        return dict(self._layout)

    def start(
        self, passages: Sequence[Passage], vectors: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        reranker = self.reranker
        layer = reranker.layout.token_layers[0]
        given = None if self.states is None else self.states.fingerprint
        fingerprint = (
            given
            if given is not None and tuple(given.texts) == tuple(PROBE_TEXTS)
            else EncoderFingerprint.of(LayerEncoder(reranker.encoder, layer))
        )
        packed = self._pack(passages, reranker.settings.codec)
        head = {f"{CODEC_PREFIX}{k}": v for k, v in packed.codec.parameters().items()}
        head[FINGERPRINT] = np.asarray(fingerprint.vectors, dtype=np.float32)
        return head, self._part(packed)

    def compute(
        self, head: Mapping[str, np.ndarray], passages: Sequence[Passage], vectors: np.ndarray
    ) -> dict[str, np.ndarray]:
        self._check_fingerprint(head)
        return self._part(self._pack(passages, stored_codec(self.identity(), head)))

    def _check_fingerprint(self, head: Mapping[str, np.ndarray]) -> None:
        reranker = self.reranker
        layer = reranker.layout.token_layers[0]
        stored = EncoderFingerprint(tuple(PROBE_TEXTS), np.asarray(head[FINGERPRINT]))
        similarity = stored.similarity(LayerEncoder(reranker.encoder, layer))
        if similarity < 1.0 - FINGERPRINT_TOLERANCE:
            raise ValueError(
                f"the index's rala sidecar holds states of another model than encoder "
                f"{reranker.encoder.name!r} (lowest probe cosine {similarity:.3f}): write with "
                "the encoder that made them, or recompute them with "
                "CorpusIndex.attach_sidecar(RaLaSidecar(reranker), replace=True)"
            )

    def _pack(self, passages: Sequence[Passage], codec: str | TokenCodec) -> PassageStates:
        reranker = self.reranker
        states: list[TokenStates | None] = (
            list(self.states.get([p.id for p in passages]))
            if self.states is not None
            else [None] * len(passages)
        )
        missing = [i for i, s in enumerate(states) if s is None]
        if missing:
            fresh = reranker.encoder.encode(
                [passages[i].embedding_text for i in missing],
                reranker.layout,
                drop_punctuation=reranker.settings.drop_punctuation,
                pooling=reranker.pooling,
            )
            for i, s in zip(missing, fresh, strict=True):
                states[i] = s
        packed = PassageStates(
            [p.id for p in passages],
            [s for s in states if s is not None],
            reranker.layout,
            encoder_name=reranker.encoder.name,
            pooling=reranker.pooling,
            drop_punctuation=reranker.settings.drop_punctuation,
            codec=codec,
            seed=reranker.settings.seed,
        )
        self._layout: dict[str, Any] = {name: ["offsets", 1] for name in packed.payload}
        self._layout |= {"pooled": "row", "token_ids": ["id_offsets", 0]}
        return packed

    @staticmethod
    def _part(packed: PassageStates) -> dict[str, np.ndarray]:
        return {
            **packed.payload,
            "offsets": packed.offsets,
            "pooled": packed.pooled,
            "token_ids": packed.token_ids,
            "id_offsets": packed.id_offsets,
        }


def stored_codec(identity: Mapping[str, Any], head: Mapping[str, np.ndarray]) -> TokenCodec:
    """The fitted codec a sidecar's head holds."""
    return load_codec(
        _codec_config(identity, head), lambda name: np.asarray(head[f"{CODEC_PREFIX}{name}"])
    )


def _codec_config(identity: Mapping[str, Any], head: Mapping[str, np.ndarray]) -> dict[str, Any]:
    name = str(identity["codec"])
    if name.startswith("residual-"):
        return {"name": name, "bits": int(name.split("-")[1].removesuffix("bit"))}
    return {"name": name}


class IndexedStates:
    """A snapshot's RaLa token states by passage id, read from its ``rala`` sidecar: what
    :class:`~rag_multihop.coop.rala.RaLaReranker` reads from a ``PassageStates``."""

    def __init__(self, snapshot: IndexSnapshot, sidecar: Sidecar) -> None:
        identity = sidecar.identity
        self.snapshot = snapshot
        self.sidecar = sidecar
        self.layout = StateLayout(tuple(identity["token_layers"]), tuple(identity["pooled_layers"]))
        self.pooling = str(identity["pooling"])
        self.drop_punctuation = bool(identity["drop_punctuation"])
        self.encoder_name = str(identity["encoder"])
        self.codec = stored_codec(identity, sidecar.head)
        self.fingerprint: EncoderFingerprint | None = EncoderFingerprint(
            PROBE_TEXTS, np.asarray(sidecar.head[FINGERPRINT])
        )
        self.dim = int(identity["dim"])

    @classmethod
    def open(cls, snapshot: IndexSnapshot) -> IndexedStates:
        """The states of ``snapshot``'s ``rala`` sidecar (``LookupError`` when it has none)."""
        return cls(snapshot, snapshot.sidecar(KIND))

    def __len__(self) -> int:
        return int(self.sidecar.covered(self.snapshot.live_rows).sum())

    def __contains__(self, pid: object) -> bool:
        return isinstance(pid, str) and self.get([pid])[0] is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the parts' arrays (dead passages' included until compaction)."""
        return int(sum(a.nbytes for part in self.sidecar.parts for a in part.values()))

    @property
    def bytes_per_passage(self) -> float:
        return self.nbytes / max(len(self), 1)

    @property
    def mean_tokens(self) -> float:
        tokens = sum(int(part["offsets"][-1]) for part in self.sidecar.parts)
        return tokens / max(sum(len(part["rows"]) for part in self.sidecar.parts), 1)

    def get(self, ids: Sequence[str]) -> list[TokenStates | None]:
        """The states of ``ids`` (decoded in one batch); ``None`` for passages the index
        does not hold live or holds without states."""
        positions = [self.snapshot.id_positions.get(pid) for pid in ids]
        rows = np.array(
            [-1 if p is None or p < 0 else int(self.snapshot.live_rows[p]) for p in positions],
            dtype=np.int64,
        )
        part, local = self.sidecar.locate(rows)
        part[rows < 0] = -1
        found = np.flatnonzero(part >= 0).tolist()
        if not found:
            return [None] * len(ids)
        payload_names = [n for n, spec in self.sidecar.layout.items() if spec == ["offsets", 1]]
        pieces = {
            name: np.concatenate(
                [self.sidecar.take(name, int(part[j]), int(local[j])) for j in found], axis=1
            )
            for name in payload_names
        }
        n_layers = len(self.layout.token_layers)
        n = next(iter(pieces.values())).shape[1]
        flat = {k: v.reshape(n_layers * n, *v.shape[2:]) for k, v in pieces.items()}
        tokens = self.codec.decode(flat).reshape(n_layers, n, -1)
        out: list[TokenStates | None] = [None] * len(ids)
        start = 0
        for j in found:
            p, i = int(part[j]), int(local[j])
            offsets = self.sidecar.parts[p]["offsets"]
            length = int(offsets[i + 1] - offsets[i])
            out[j] = TokenStates(
                tokens[:, start : start + length],
                np.asarray(self.sidecar.parts[p]["pooled"][i]),
                np.asarray(self.sidecar.take("token_ids", p, i), dtype=np.int32),
            )
            start += length
        return out


def rala_from_index(snapshot: IndexSnapshot, encoder: Any, **options: Any) -> RaLaReranker:
    """A :class:`~rag_multihop.coop.rala.RaLaReranker` (``options``: its keyword arguments)
    reading passage states from ``snapshot``'s ``rala`` sidecar. The reranker checks the
    states against its encoder and settings when first used: states of another model, layout
    or punctuation setting are refused with a ``ValueError``; ``LookupError`` when the index
    holds no ``rala`` sidecar."""
    from rag_multihop.coop.rala import RaLaReranker

    return RaLaReranker(encoder, store=IndexedStates.open(snapshot), **options)
