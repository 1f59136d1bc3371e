"""AAR's passage transforms ``f(p)`` as a sidecar of the persistent corpus index.

:class:`AssociationSidecar` writes them: its head holds the model's weights (numpy arrays
under torch's parameter names) and, when known, its pair source (``pair_source``, a
one-string array: it picks the default first-stage margin, changes no stored value, so it
is no part of the sidecar's identity, and a head without it, attached by an older version,
still serves), each part ``f`` of its rows' stored unit vectors, so the
index computes ``f(p)`` of every passage added later by itself (no producer needed after the
first attach). :class:`IndexedPassages` reads ``p`` (the index's vectors) and ``f(p)`` (the
sidecar) of live passages by id for :meth:`AssociationReranker.from_index
<rag_multihop.association.reranker.AssociationReranker.from_index>`.

Example:
    >>> index.attach_sidecar(AssociationSidecar(reranker))  # doctest: +SKIP
    >>> aar = AssociationReranker.from_index(index.snapshot(), encoder=encoder)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop.association.model import (
    RESIDUAL_KEY,
    AssociationWeights,
    association_transform,
)
from rag_multihop.types import Passage

if TYPE_CHECKING:
    from rag_multihop.association.reranker import AssociationReranker
    from rag_multihop.store.sidecars import Sidecar
    from rag_multihop.store.snapshot import IndexSnapshot

KIND = "aar"
TRANSFORMED = "f"
PAIR_SOURCE = "pair_source"


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
    were obtained, ``None`` when not recorded)."""

    kind = KIND

    def __init__(
        self, weights: AssociationWeights, encoder_name: str, pair_source: str | None = None
    ) -> None:
        self.weights = weights
        self.encoder_name = str(encoder_name)
        self.pair_source = pair_source
        self._digest = weights_digest(weights)

    @classmethod
    def of(cls, reranker: AssociationReranker) -> AssociationSidecar:
        """The producer of a fitted reranker's model."""
        return cls(reranker.weights, reranker.encoder_name, reranker.pair_source)

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
        head = self.weights.to_state_dict()
        if self.pair_source is not None:
            head[PAIR_SOURCE] = np.array([self.pair_source])
        return head, self.compute({}, passages, vectors)

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
