"""AAR's passage transforms ``f(p)`` as a sidecar of the persistent corpus index.

:class:`AssociationSidecar` writes them: its head holds the model's weights (numpy arrays
under torch's parameter names) and, when known, its pair source (``pair_source``, a
one-string array: it picks the default first-stage margin, changes no stored value, so it
is no part of the sidecar's identity, and a head without it, attached by an older version,
still serves), each part ``f`` of its rows' stored unit vectors, so the
index computes ``f(p)`` of every passage added later by itself (no producer needed after the
first attach). A producer made from a reranker (:meth:`AssociationSidecar.of`) keeps a probe
of the model's own passage vectors and, when attached, refuses an index whose vectors of the
same passages are not those (another encoder of the same dimension: see
:data:`MIN_MEDIAN_COSINE`). :class:`IndexedPassages` reads ``p`` (the index's vectors) and
``f(p)`` (the sidecar) of live passages by id for :meth:`AssociationReranker.from_index
<rag_multihop.association.reranker.AssociationReranker.from_index>`.

Example:
    >>> index.attach_sidecar(AssociationSidecar.of(reranker))  # doctest: +SKIP
    >>> aar = AssociationReranker.from_index(index.snapshot(), encoder=encoder)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop.association.model import (
    RESIDUAL_KEY,
    AssociationWeights,
    association_transform,
)
from rag_multihop.types import Passage
from rag_multihop.validation import l2_normalize

if TYPE_CHECKING:
    from rag_multihop.association.reranker import AssociationReranker
    from rag_multihop.store.sidecars import Sidecar
    from rag_multihop.store.snapshot import IndexSnapshot

KIND = "aar"
TRANSFORMED = "f"
PAIR_SOURCE = "pair_source"
PROBE_SIZE = 256
"""The model's own passages (evenly spaced) a producer made from a reranker keeps as its probe."""
MIN_SHARED = 3
"""The fewest probe passages the index must hold for its vectors to be compared."""
MIN_MEDIAN_COSINE = 0.95
"""The lowest median cosine between the model's and the index's vectors of shared passages:
the same encoder gives ≈ 1 (int8 MiniLM vs fp32: mean 0.997, min 0.993, docs/benchmarks.md;
float16 storage ≈ 0.99999), another encoder ≈ 0 (its vector space is unrelated)."""

logger = logging.getLogger(__name__)


def weights_digest(weights: AssociationWeights) -> str:
    """SHA-256 of the weights (names, shapes, float32 bytes): the model's identity."""
    digest = hashlib.sha256()
    for name, array in sorted(weights.to_state_dict().items()):
        digest.update(f"{name}:{array.shape}".encode())
        digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    return digest.hexdigest()[:32]


class AssociationSidecar:
    """The ``aar`` sidecar producer of one association model (``weights``; ``encoder_name``
    names the encoder its passage vectors come from; ``pair_source`` how its training pairs
    were obtained, ``None`` when not recorded; ``probe``: unit vectors of passages the model
    was fitted on, by id, compared with the index's by :meth:`start`; ``None``: no check).
    The probe is no part of the identity."""

    kind = KIND

    def __init__(
        self,
        weights: AssociationWeights,
        encoder_name: str,
        pair_source: str | None = None,
        probe: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.weights = weights
        self.encoder_name = str(encoder_name)
        self.pair_source = pair_source
        self.probe = probe
        self._digest = weights_digest(weights)

    @classmethod
    def of(cls, reranker: AssociationReranker, *, check: bool = True) -> AssociationSidecar:
        """The producer of a fitted reranker's model, with a probe of up to
        :data:`PROBE_SIZE` of its stored passages (none when ``check`` is false: for a
        model of another corpus whose passage ids merely coincide with the index's; none
        either for a reranker storing no passages, e.g. one served from an index)."""
        probe = None
        if check and reranker.passage_ids:
            ids = reranker.passage_ids
            rows = np.linspace(0, len(ids) - 1, min(len(ids), PROBE_SIZE)).round().astype(int)
            chosen = [ids[i] for i in rows.tolist()]
            probe = dict(zip(chosen, reranker.passage_vectors(chosen), strict=True))
        return cls(reranker.weights, reranker.encoder_name, reranker.pair_source, probe)

    @classmethod
    def from_sidecar(cls, sidecar: Sidecar) -> AssociationSidecar:
        """The producer whose weights (and pair source) the stored head holds."""
        state = {name: np.array(value) for name, value in sidecar.head.items()}
        source = state.pop(PAIR_SOURCE, None)
        state[RESIDUAL_KEY] = state[RESIDUAL_KEY].reshape(())  # a memory map has no 0-d form
        weights = AssociationWeights.from_state_dict(state)
        pair_source = None if source is None else str(source[0])
        return cls(weights, str(sidecar.identity["encoder"]), pair_source)

    def identity(self) -> dict[str, Any]:
        return {"model": self._digest, "encoder": self.encoder_name, "dim": self.weights.dim}

    def layout(self) -> dict[str, Any]:
        return {TRANSFORMED: "row"}

    def start(
        self, passages: Sequence[Passage], vectors: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        part = self.compute({}, passages, vectors)
        self._check_probe(passages, vectors)
        head = self.weights.to_state_dict()
        if self.pair_source is not None:
            head[PAIR_SOURCE] = np.array([self.pair_source])
        return head, part

    def _check_probe(self, passages: Sequence[Passage], vectors: np.ndarray) -> None:
        """``ValueError`` when the index's vectors of the probe's passages (among the first
        ones attached) are not the model's: the model was trained on another encoder's."""
        if self.probe is None:
            return
        rows = {passage.id: i for i, passage in enumerate(passages)}
        shared = [pid for pid in self.probe if pid in rows]
        if len(shared) < MIN_SHARED:
            logger.info(
                "the association model (encoder %r) shares %d of its %d probe passages with "
                "the index: its vectors cannot be compared with the index's (no check; a "
                "model trained on another corpus is used through f(p) as it is)",
                self.encoder_name,
                len(shared),
                len(self.probe),
            )
            return
        mine = l2_normalize(np.stack([self.probe[pid] for pid in shared]))
        theirs = l2_normalize(np.asarray(vectors)[[rows[pid] for pid in shared]])
        median = float(np.median(np.sum(mine * theirs, axis=1)))
        if median < MIN_MEDIAN_COSINE:
            raise ValueError(
                f"the association model (encoder {self.encoder_name!r}) was trained on other "
                f"vectors than this index's: of {len(shared)} passages both hold, the median "
                f"cosine between the model's and the index's vector is {median:.3f} (the same "
                f"encoder, even quantised, gives ≈ 1; refused below {MIN_MEDIAN_COSINE}). "
                "Train the model on this index's vectors (AssociationReranker.fit with "
                "snapshot.corpus.ids and snapshot.vectors); for a model of another corpus "
                "whose passage ids merely coincide with these, attach "
                "AssociationSidecar.of(reranker, check=False) (rag-multihop index attach "
                "--no-vector-check)"
            )

    def compute(
        self, head: Mapping[str, np.ndarray], passages: Sequence[Passage], vectors: np.ndarray
    ) -> dict[str, np.ndarray]:
        if vectors.shape[1] != self.weights.dim:
            raise ValueError(
                f"the association model has dimension {self.weights.dim}, the index's "
                f"vectors {vectors.shape[1]}"
            )
        return {TRANSFORMED: association_transform(np.asarray(vectors), self.weights)}


class IndexedPassages:
    """``p`` and ``f(p)`` of a snapshot's live passages, by id."""

    def __init__(self, snapshot: IndexSnapshot, sidecar: Sidecar) -> None:
        self.snapshot = snapshot
        self.sidecar = sidecar
        self.computed = 0
        """Passages whose ``f(p)`` was not stored and was computed at query time."""
        self._producer = AssociationSidecar.from_sidecar(sidecar)

    @property
    def weights(self) -> AssociationWeights:
        return self._producer.weights

    @property
    def pair_source(self) -> str | None:
        """The model's pair source as the head records it (``None``: not recorded)."""
        return self._producer.pair_source

    @property
    def identity(self) -> Mapping[str, Any]:
        return self.sidecar.identity

    def holds(self, passage_id: str) -> bool:
        """Whether ``passage_id`` is a live passage of the snapshot."""
        position = self.snapshot.id_positions.get(passage_id)
        return position is not None and position >= 0

    def lookup(self, ids: Sequence[str]) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The indexes into ``ids`` of live passages, their unit vectors and ``f(p)``."""
        snapshot = self.snapshot
        found = [snapshot.id_positions.get(pid) for pid in ids]
        known = [i for i, position in enumerate(found) if position is not None and position >= 0]
        positions = np.array([found[i] for i in known], dtype=np.int64)
        global_rows = snapshot.live_rows[positions]
        vectors = np.asarray(snapshot.vectors[positions], dtype=np.float32)
        transformed = np.empty_like(vectors)
        part, local = self.sidecar.locate(global_rows)
        for j in np.flatnonzero(part >= 0).tolist():
            transformed[j] = self.sidecar.parts[int(part[j])][TRANSFORMED][int(local[j])]
        missing = np.flatnonzero(part < 0)
        if len(missing):
            transformed[missing] = association_transform(vectors[missing], self.weights)
            self.computed += len(missing)
        return known, vectors, transformed
