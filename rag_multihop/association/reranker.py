"""The association reranker: settings and state around the pure functions of :mod:`.model`.

:class:`AssociationReranker` implements the core ``Reranker`` protocol. ``fit`` trains f on
association pairs (torch, the ``train`` extra) and precomputes ``f(p)`` for every passage;
``rerank`` needs numpy only: for each candidate it blends ``cos(q, p)`` with the association
score ``a(q, p)`` of the chosen mode, ``score = (1 − λ)·cos + λ·a``. Candidates keep their
old signals and gain ``"association"`` and ``"cosine"``.

The model records its pair source (``"corpus"``: label-free pairs read from the corpus text;
``"labelled"``: gold or other labelled pairs; ``None``: not recorded, saved by an older
version) and, unless ``first_stage_margin`` is given, keeps the first stage's order by the
margin that source calls for (:meth:`AssociationSettings.margin_for
<rag_multihop.association.settings.AssociationSettings.margin_for>`).

Vectors for a candidate come from, in order: the model's stored vectors (by passage id), the
``vectors`` mapping given to ``rerank``, the reranker's encoder (embedding
``passage.embedding_text``). Passages found in neither are an error naming them. f(p) of a
passage the model does not store is computed on the fly; :meth:`AssociationReranker.add_passages`
returns a reranker that also stores new passages, without retraining (a fitted model never
changes: rerankers sharing it are safe to use from several threads).

Example (needs torch for ``fit``):
    >>> import numpy as np
    >>> from rag_multihop import Candidate, Passage, Query
    >>> rng = np.random.default_rng(0)
    >>> ids = ["a", "b", "c", "d"]
    >>> vectors = rng.normal(size=(4, 8)).astype("float32")
    >>> reranker = AssociationReranker(training=TrainingConfig(epochs=3, batch_size=4))
    >>> reranker = reranker.fit(ids, vectors, [("a", "b"), ("c", "d")], encoder_name="toy")
    >>> found = [Candidate(Passage(i, f"text {i}"), 0.5, signals={"dense": 0.5}) for i in ids]
    >>> ranked = reranker.rerank(Query("q", embedding=vectors[0]), found, top_n=2)
    >>> len(ranked), sorted(ranked[0].signals)
    (2, ['association', 'cosine', 'dense'])
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop._atomic import ArtifactError, artifact_path
from rag_multihop._settings import SettingsField, resolve_settings
from rag_multihop.association.model import (
    DEFAULT_LAMBDA,
    DEFAULT_MODE,
    LAYER_NORM_EPS,
    N_LINEAR,
    AssociationWeights,
    association_transform,
    blend,
    get_scoring_mode,
)
from rag_multihop.association.pairs import PairSet
from rag_multihop.association.persistence import CONFIG_FILE, SavedModel, load_model, save_model
from rag_multihop.association.settings import PAIR_SOURCES, AssociationSettings
from rag_multihop.association.training import TrainingConfig
from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.fingerprint import FINGERPRINT_TOLERANCE, EncoderFingerprint
from rag_multihop.margin import margin_ranked
from rag_multihop.tracing import span
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import (
    as_embedding_matrix,
    check_candidates,
    check_positive_int,
    check_query,
    l2_normalize,
    loggable,
)
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.association.indexed import IndexedPassages
    from rag_multihop.store.methods import IndexSource
    from rag_multihop.store.snapshot import IndexSnapshot

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Store:
    """A fitted model: weights, the encoder it belongs to (name and, when known, fingerprint),
    P / f(P) by passage id and the source of its training pairs (``None``: not recorded).

    Immutable (read-only arrays), so rerankers made by :meth:`AssociationReranker.with_settings`
    share it safely, also across threads.
    """

    weights: AssociationWeights
    encoder_name: str
    ids: tuple[str, ...]
    vectors: np.ndarray
    transformed: np.ndarray
    provenance: Mapping[str, Any] = field(default_factory=dict)
    fingerprint: EncoderFingerprint | None = None
    pair_source: str | None = None
    position: Mapping[str, int] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))
        object.__setattr__(self, "position", {pid: i for i, pid in enumerate(self.ids)})
        for array in (self.vectors, self.transformed):
            array.setflags(write=False)


@dataclass(frozen=True)
class AssociationScores:
    """Per-candidate arrays, in candidate order: ``cosine``, ``association`` and ``score``."""

    cosine: np.ndarray
    association: np.ndarray
    score: np.ndarray


def rescore_candidates(
    candidates: Sequence[Candidate],
    scores: AssociationScores,
    top_n: int | None = None,
    *,
    first_stage_margin: float = 0.0,
) -> list[Candidate]:
    """New candidates with ``scores.score``, ranked (ties by id), at most ``top_n``.

    Each keeps its signals and gains ``"association"`` and ``"cosine"``; inputs are not changed.
    With ``first_stage_margin`` > 0 a candidate takes a rank from the incoming order (by
    ``candidates``' scores) only when its blended score leads by that much
    (:func:`~rag_multihop.margin.margin_ranked`).
    """
    score, cosine = scores.score.tolist(), scores.cosine.tolist()
    association = scores.association.tolist()
    if first_stage_margin > 0:
        rescored = [
            Candidate(
                c.passage,
                score[i],
                0,
                {**c.signals, "association": association[i], "cosine": cosine[i]},
            )
            for i, c in enumerate(candidates)
        ]
        first_scores = [c.score for c in candidates]
        return margin_ranked(first_scores, rescored, scores.score, first_stage_margin, top_n)
    order = sorted(range(len(candidates)), key=lambda i: (-score[i], candidates[i].passage.id))
    return [
        Candidate(
            candidates[i].passage,
            score[i],
            rank,
            {**candidates[i].signals, "association": association[i], "cosine": cosine[i]},
        )
        for rank, i in enumerate(order[:top_n], start=1)
    ]


class AssociationReranker:
    """Association-augmented reranking (AAR) of a candidate list.

    **Which encoder belongs to a model.** A model fitted with an encoder records that
    encoder's :class:`~rag_multihop.encoders.fingerprint.EncoderFingerprint` (its embeddings
    of fixed probe texts) and saves it; any encoder that reproduces it is accepted, whatever
    its name (the bundled MiniLM by path and ``sentence-transformers/all-MiniLM-L6-v2`` are
    one model), and any other, even of the same dimension, is refused with a ``ValueError``.
    A model without a fingerprint (saved by an older version, or fitted from vectors with
    ``encoder_name`` only) checks the encoder's name, says so in a warning, and records the
    fingerprint of the first encoder that passes, so saving it again upgrades it.

    Args:
        encoder: embeds queries that carry no embedding and passages the model does not
            store; must be the encoder the model was trained with (see above).
        settings: :class:`~rag_multihop.association.settings.AssociationSettings` (λ, the
            scoring mode, the first-stage margin).
        lambda_, mode, first_stage_margin: override the same-named field of ``settings``
            (``None``: not given).
        training: hyperparameters used by :meth:`fit`.
    """

    lambda_ = SettingsField()
    mode = SettingsField()

    def __init__(
        self,
        *,
        encoder: Encoder | None = None,
        settings: AssociationSettings | None = None,
        lambda_: float | None = None,
        mode: str | None = None,
        first_stage_margin: float | None = None,
        training: TrainingConfig | None = None,
    ) -> None:
        self.encoder = encoder
        self.settings = resolve_settings(
            AssociationSettings,
            settings,
            lambda_=lambda_,
            mode=mode,
            first_stage_margin=first_stage_margin,
        )
        self.training = training or TrainingConfig()
        self._store: _Store | None = None
        self._vectors: PassageVectors | None = None
        self._index: IndexedPassages | None = None

    # --- state --------------------------------------------------------------------------------

    @property
    def is_fitted(self) -> bool:
        return self._store is not None

    @property
    def _fitted(self) -> _Store:
        if self._store is None:
            raise RuntimeError("the association reranker is not fitted; call fit() or load()")
        return self._store

    @property
    def encoder_name(self) -> str:
        return self._fitted.encoder_name

    @property
    def fingerprint(self) -> EncoderFingerprint | None:
        """The fingerprint of the model's encoder (``None`` when it is not known)."""
        return self._fitted.fingerprint

    @property
    def dim(self) -> int:
        return self._fitted.weights.dim

    @property
    def weights(self) -> AssociationWeights:
        return self._fitted.weights

    @property
    def passage_ids(self) -> tuple[str, ...]:
        """Ids whose vectors and f(p) the model stores."""
        return self._fitted.ids

    @property
    def provenance(self) -> dict[str, Any]:
        """Training settings and statistics (``training``, ``training_stats``, ``pair_stats``)."""
        return dict(self._fitted.provenance)

    @property
    def pair_source(self) -> str | None:
        """How the training pairs were obtained: ``"corpus"`` (label-free, read from the
        corpus text), ``"labelled"`` (gold or other labelled pairs) or ``None`` (not
        recorded: a model saved by an older version)."""
        return self._fitted.pair_source

    @property
    def first_stage_margin(self) -> float:
        """The margin :meth:`rerank` keeps the first stage's order by: the settings' value,
        else the one the model's :attr:`pair_source` calls for."""
        return self.settings.margin_for(self._fitted.pair_source)

    def with_settings(
        self,
        settings: AssociationSettings | None = None,
        *,
        lambda_: float | None = None,
        mode: str | None = None,
        first_stage_margin: float | None = None,
        encoder: Encoder | None = None,
    ) -> AssociationReranker:
        """A reranker sharing this one's fitted model (read-only, so sharing is safe), with
        other scoring settings (``settings`` and/or the overrides) or another encoder."""
        other = AssociationReranker(
            encoder=self.encoder if encoder is None else encoder,
            settings=settings or self.settings,
            lambda_=lambda_,
            mode=mode,
            first_stage_margin=first_stage_margin,
            training=self.training,
        )
        other._store = None if self._store is None else self._checked(self._store, encoder)
        other._index = self._index
        return other

    # --- serving from a persistent corpus index -------------------------------------------------

    @classmethod
    def from_index(
        cls,
        snapshot: IndexSource,
        *,
        encoder: Encoder | None = None,
        settings: AssociationSettings | None = None,
        lambda_: float | None = None,
        mode: str | None = None,
        first_stage_margin: float | None = None,
    ) -> AssociationReranker:
        """A reranker served from a persistent index's ``aar`` sidecar: the model's weights
        and pair source from its head, ``p`` from the index's vectors and ``f(p)`` from its
        parts (nothing recomputed; a live passage without a stored ``f(p)`` gets it computed
        on the fly, counted in :attr:`computed_at_query_time`). ``LookupError`` when the
        index holds no ``aar`` sidecar; ``ValueError`` when ``encoder`` is not the index's
        encoder (by the fingerprint the index recorded; by dimension when it recorded none)."""
        from rag_multihop.association.indexed import KIND, IndexedPassages
        from rag_multihop.store.methods import as_snapshot

        snapshot = as_snapshot(snapshot)
        indexed = IndexedPassages(snapshot, snapshot.sidecar(KIND))
        empty = np.zeros((0, indexed.weights.dim), dtype=np.float32)
        recorded = snapshot.manifest.get("encoder")
        fingerprint = (
            None
            if recorded is None
            else EncoderFingerprint(tuple(recorded["texts"]), np.array(recorded["vectors"]))
        )
        store = _Store(
            indexed.weights,
            str(indexed.identity["encoder"]),
            (),
            empty,
            empty.copy(),
            {},
            fingerprint,
            indexed.pair_source,
        )
        reranker = cls(
            encoder=encoder,
            settings=settings,
            lambda_=lambda_,
            mode=mode,
            first_stage_margin=first_stage_margin,
        )
        if fingerprint is None and encoder is not None:  # nothing recorded to compare with
            if encoder.dim != indexed.weights.dim:
                raise ValueError(
                    f"the index's AAR model has dimension {indexed.weights.dim}, the given "
                    f"encoder {encoder.name!r} {encoder.dim}"
                )
            reranker._store = store
        else:
            reranker._store = cls._checked(store, encoder)
        reranker._index = indexed
        return reranker

    def with_index(self, snapshot: IndexSnapshot) -> AssociationReranker:
        """This reranker reading ``p`` and ``f(p)`` from ``snapshot``'s ``aar`` sidecar, which
        must hold this very model's transforms: another model's (a stale sidecar) is a
        ``ValueError`` naming both (recompute it with ``CorpusIndex.attach_sidecar(
        AssociationSidecar.of(reranker), replace=True)``). A sidecar that records no pair
        source (attached by an older version) serves this model's."""
        from rag_multihop.association.indexed import AssociationSidecar

        served = AssociationReranker.from_index(
            snapshot, encoder=self.encoder, settings=self.settings
        )
        mine = AssociationSidecar.of(self, check=False).identity()["model"]
        assert served._index is not None
        stored = served._index.identity["model"]
        if mine != stored:
            raise ValueError(
                f"the index at {snapshot.root} holds AAR passage transforms of model {stored}, "
                f"not of this model ({mine}): recompute them with CorpusIndex.attach_sidecar("
                "AssociationSidecar.of(reranker), replace=True), or use "
                "AssociationReranker.from_index(snapshot) to serve the stored model"
            )
        if served._fitted.pair_source is None:
            served._store = replace(served._fitted, pair_source=self._fitted.pair_source)
        return served

    @property
    def computed_at_query_time(self) -> int:
        """Passages served from an index whose ``f(p)`` was not stored (computed on the fly)."""
        return 0 if self._index is None else self._index.computed

    def check_encoder(self, encoder: Encoder) -> None:
        """``ValueError`` unless ``encoder`` is the model's encoder (by fingerprint; by name
        for a model without one), e.g. an app's embedder before its vectors are used."""
        self._checked(self._fitted, encoder)

    def stores(self, passage_id: str) -> bool:
        """Whether the model (or the index it serves from) stores a vector and f(p) for
        ``passage_id``."""
        if self._index is not None:
            return self._index.holds(passage_id)
        return passage_id in self._fitted.position

    def passage_vectors(self, passage_ids: Sequence[str]) -> np.ndarray:
        """The stored (normalised) vectors of ``passage_ids``; ``KeyError`` names unknown ids."""
        store = self._fitted
        unknown = [pid for pid in passage_ids if pid not in store.position]
        if unknown:
            raise KeyError(f"the model stores no vectors for {len(unknown)} id(s): {unknown[:5]}")
        return store.vectors[[store.position[pid] for pid in passage_ids]]

    # --- fitting ------------------------------------------------------------------------------

    def fit(
        self,
        passage_ids: Sequence[str],
        passage_vectors: np.ndarray,
        pairs: PairSet | Iterable[Sequence[str]],
        *,
        encoder_name: str | None = None,
        show_progress: bool = False,
    ) -> AssociationReranker:
        """Train f on ``pairs`` of ``passage_ids`` and store P and f(P); returns ``self``.

        ``passage_vectors`` holds one embedding per id (rows are L2-normalised here).
        ``encoder_name`` names the encoder that made them (default: ``encoder.name``).
        With an ``encoder`` the model records its fingerprint (see the class docstring). The
        model records the pairs' source (:attr:`PairSet.pair_source
        <rag_multihop.association.pairs.PairSet.pair_source>`; plain id pairs are
        ``"labelled"``), which chooses the default first-stage margin.
        """
        from rag_multihop.association.training import train_association

        ids, matrix = self._check_passages(passage_ids, passage_vectors, dim=None)
        if encoder_name is None:
            if self.encoder is None:
                raise ValueError(
                    "fit needs encoder_name (the model that embedded the passages) when the "
                    "reranker has no encoder"
                )
            encoder_name = self.encoder.name
        pair_set = pairs if isinstance(pairs, PairSet) else PairSet.from_pairs(pairs)
        position = {pid: i for i, pid in enumerate(ids)}
        weights, stats = train_association(
            matrix, pair_set.rows(position), self.training, show_progress=show_progress
        )
        provenance = {
            "training": self.training.to_dict(),
            "training_stats": stats.to_dict(),
            "pair_stats": pair_set.stats().to_dict(),
        }
        transformed = association_transform(matrix, weights)
        fingerprint = None if self.encoder is None else EncoderFingerprint.of(self.encoder)
        store = _Store(
            weights,
            encoder_name,
            tuple(ids),
            matrix,
            transformed,
            provenance,
            fingerprint,
            pair_set.pair_source,
        )
        self._store, self._vectors = self._checked(store, self.encoder), None
        return self

    def add_passages(
        self, passage_ids: Sequence[str], passage_vectors: np.ndarray
    ) -> AssociationReranker:
        """A reranker whose model also stores vectors and f(p) for these passages (no
        retraining; known ids get the new vectors). This reranker is left unchanged."""
        store = self._fitted
        ids, matrix = self._check_passages(passage_ids, passage_vectors, dim=self.dim)
        transformed = association_transform(matrix, store.weights)
        vectors, stored_f = store.vectors.copy(), store.transformed.copy()
        known = [i for i, pid in enumerate(ids) if pid in store.position]
        rows = [store.position[ids[i]] for i in known]
        vectors[rows], stored_f[rows] = matrix[known], transformed[known]
        new = [i for i, pid in enumerate(ids) if pid not in store.position]
        other = self.with_settings()
        other._store = _Store(
            store.weights,
            store.encoder_name,
            (*store.ids, *(ids[i] for i in new)),
            np.concatenate([vectors, matrix[new]]),
            np.concatenate([stored_f, transformed[new]]),
            store.provenance,
            store.fingerprint,
            store.pair_source,
        )
        logger.info("added %d passages, replaced %d", len(new), len(known))
        return other

    @staticmethod
    def _check_passages(
        passage_ids: Sequence[str], passage_vectors: np.ndarray, *, dim: int | None
    ) -> tuple[list[str], np.ndarray]:
        ids = [str(pid) for pid in passage_ids]
        if not ids:
            raise ValueError("no passages given; pass at least one passage id and vector")
        dupes = [pid for pid, n in Counter(ids).items() if n > 1]
        if dupes:
            raise ValueError(f"passage ids must be unique; duplicated: {dupes[:5]}")
        matrix = as_embedding_matrix(passage_vectors, name="passage vectors", ids=ids)
        if dim is not None and matrix.shape[1] != dim:
            raise ValueError(
                f"passage vectors have dimension {matrix.shape[1]} but the model expects {dim}"
            )
        if matrix.shape[0] != len(ids):
            raise ValueError(f"got {len(ids)} passage ids but {matrix.shape[0]} vectors")
        return ids, l2_normalize(matrix)

    @staticmethod
    def _checked(store: _Store, encoder: Encoder | None) -> _Store:
        """``store`` once ``encoder`` is known to be its encoder (``ValueError`` otherwise);
        a store without a fingerprint comes back with ``encoder``'s."""
        if encoder is None:
            return store
        trained = f"the association model was trained with encoder {store.encoder_name!r}"
        if encoder.dim != store.weights.dim:
            raise ValueError(
                f"{trained} (dim {store.weights.dim}) but the given encoder {encoder.name!r} "
                f"has dim {encoder.dim}; use the encoder the model was trained with, or retrain"
            )
        if store.fingerprint is not None:
            similarity = store.fingerprint.similarity(encoder)
            if similarity < 1.0 - FINGERPRINT_TOLERANCE:
                raise ValueError(
                    f"{trained} but the given encoder {encoder.name!r} (also dim "
                    f"{encoder.dim}) is a different model: it embeds the model's probe texts "
                    f"differently (lowest cosine {similarity:.3f}; the same model gives at "
                    f"least {1.0 - FINGERPRINT_TOLERANCE:.2f}). Use the encoder the model was "
                    "trained with, or retrain"
                )
            if encoder.name != store.encoder_name:
                logger.info(
                    "encoder %r reproduces the fingerprint of %r: accepted as the same model",
                    encoder.name,
                    store.encoder_name,
                )
            return store
        if encoder.name != store.encoder_name:
            raise ValueError(
                f"{trained} but the given encoder is {encoder.name!r}. The model has no "
                "encoder fingerprint (saved by an older rag-multihop, or fitted from vectors "
                "without an encoder), so only names can be compared: use an encoder named "
                f"{store.encoder_name!r}, or retrain to record the fingerprint"
            )
        logger.warning(
            "the association model has no encoder fingerprint (saved by an older rag-multihop, "
            "or fitted from vectors without an encoder): encoder %r is accepted by its name "
            "only; save the model again to record this encoder's fingerprint",
            encoder.name,
        )
        return replace(store, fingerprint=EncoderFingerprint.of(encoder))

    # --- reranking ----------------------------------------------------------------------------

    def rerank(
        self,
        query: Query,
        candidates: Sequence[Candidate],
        top_n: int | None = None,
        *,
        vectors: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ) -> list[Candidate]:
        """``candidates`` re-scored with association, best first; at most ``top_n``.

        An empty candidate list gives an empty list. ``vectors`` supplies embeddings for
        passages the model does not store (it is not consulted for stored ones).

        Raises:
            ValueError: duplicate candidate ids, a query without embedding and no encoder,
                a dimension mismatch, NaN/inf vectors, or passages without a vector.
        """
        if top_n is not None:
            top_n = check_positive_int(top_n, "top_n")
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            return []
        scores = self.score(query, candidates, vectors=vectors)
        margin = self.first_stage_margin
        return rescore_candidates(candidates, scores, top_n, first_stage_margin=margin)

    def score(
        self,
        query: Query,
        candidates: Sequence[Candidate],
        *,
        vectors: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ) -> AssociationScores:
        """The cosine, association and blended scores of ``candidates`` (no reordering)."""
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            raise ValueError("no candidates to score; give at least one candidate")
        ids = [c.passage.id for c in candidates]
        if len(set(ids)) != len(ids):
            dupes = [pid for pid, n in Counter(ids).items() if n > 1]
            raise ValueError(f"candidates must have unique passage ids; duplicated: {dupes[:5]}")
        store = self._fitted
        with span("aar.association", candidates=len(candidates), mode=self.settings.mode):
            query_vector = self._query_vector(query)
            passages, transformed = self._candidate_vectors(candidates, vectors)
            cosine = passages @ query_vector
            scoring = get_scoring_mode(self.settings.mode)
            query_f = (
                association_transform(query_vector[None, :], store.weights)[0]
                if scoring.uses_query_transform
                else None
            )
            association = scoring.function(query_vector, query_f, passages, transformed)
        with span("aar.blend", candidates=len(candidates), blend_lambda=self.settings.lambda_):
            blended = blend(cosine, association, self.settings.lambda_)
        return AssociationScores(cosine, association, blended)

    def _lookup(self) -> PassageVectors:
        """Vectors of queries and of passages the model does not store (given, else encoded)."""
        if self._vectors is None:
            self._vectors = PassageVectors(
                self.encoder,
                dim=self.dim,
                store_name="the association model",
                hint="pass vectors={id: embedding}, an encoder, or add them with add_passages()",
            )
        return self._vectors

    def _query_vector(self, query: Query) -> np.ndarray:
        store = self._fitted
        if query.embedding is not None and np.size(query.embedding) != store.weights.dim:
            raise ValueError(
                f"query embedding has dimension {np.size(query.embedding)} but the association "
                f"model expects {store.weights.dim} ({store.encoder_name})"
            )
        if query.embedding is None and self.encoder is None:
            raise ValueError(
                f"query {loggable(query.text)} has no embedding and the reranker has no encoder; "
                "pass Query(..., embedding=...) or AssociationReranker(encoder=...)"
            )
        return self._lookup().query(query)

    def _candidate_vectors(
        self,
        candidates: Sequence[Candidate],
        vectors: Mapping[str, Sequence[float] | np.ndarray] | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        store = self._fitted
        known, known_vectors, known_transformed = self._stored([c.passage.id for c in candidates])
        if len(known) == len(candidates):
            return known_vectors, known_transformed
        found = set(known)
        missing = [i for i in range(len(candidates)) if i not in found]
        extra = self._lookup().passages([candidates[i].passage for i in missing], given=vectors)
        passages = np.empty((len(candidates), store.weights.dim), dtype=np.float32)
        transformed = np.empty_like(passages)
        passages[known] = known_vectors
        transformed[known] = known_transformed
        passages[missing] = extra
        transformed[missing] = association_transform(extra, store.weights)
        return passages, transformed

    def _stored(self, ids: Sequence[str]) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The indexes into ``ids`` of the passages whose P and f(P) are stored (in the model,
        or in the index it serves from), with those rows."""
        if self._index is not None:
            return self._index.lookup(ids)
        store = self._fitted
        rows = [store.position.get(pid, -1) for pid in ids]
        known = [i for i, row in enumerate(rows) if row >= 0]
        chosen = [rows[i] for i in known]
        return known, store.vectors[chosen], store.transformed[chosen]

    # --- persistence --------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save the model (see :mod:`.persistence`); returns the directory."""
        store = self._fitted
        config = {
            "encoder": {"name": store.encoder_name, "dim": store.weights.dim},
            "scoring": {"lambda": self.settings.lambda_, "mode": self.settings.mode},
            "architecture": {
                "linear_layers": N_LINEAR,
                "hidden_dim": store.weights.dim,
                "layer_norm_eps": LAYER_NORM_EPS,
            },
            "pair_source": store.pair_source,
            **store.provenance,
        }
        ids = tuple(store.ids)
        saved = SavedModel(
            store.weights, config, ids, store.vectors, store.transformed, store.fingerprint
        )
        return save_model(saved, directory)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        encoder: Encoder | None = None,
        lambda_: float | None = None,
        mode: str | None = None,
        first_stage_margin: float | None = None,
    ) -> AssociationReranker:
        """A saved reranker; ``lambda_`` / ``mode`` override the saved scoring settings,
        ``first_stage_margin`` the margin chosen from the saved pair source (a model saved
        without one, by an older version, gets 0).

        Raises ``ValueError`` when ``encoder`` is not the one the model was trained with (by
        fingerprint; by name for a model saved without one), or when the directory is
        corrupted or not a model.
        """
        saved = load_model(directory)
        scoring = saved.config.get("scoring") or {}
        training = saved.config.get("training")
        try:  # the file's own settings, checked as the constructor checks them
            stored = AssociationSettings(
                lambda_=scoring.get("lambda", DEFAULT_LAMBDA),
                mode=scoring.get("mode", DEFAULT_MODE),
            )
            config = TrainingConfig.from_dict(training) if isinstance(training, dict) else None
            pair_source = saved.config.get("pair_source")
            if pair_source is not None and pair_source not in PAIR_SOURCES:
                raise ValueError(
                    f"pair_source must be one of {sorted(PAIR_SOURCES)} or null, "
                    f"got {pair_source!r}"
                )
        except (AttributeError, TypeError, ValueError) as exc:
            config_file = artifact_path(directory) / CONFIG_FILE
            raise ArtifactError(f"{config_file} holds invalid settings: {exc}") from None
        reranker = cls(
            encoder=encoder,
            settings=stored,
            lambda_=lambda_,
            mode=mode,
            first_stage_margin=first_stage_margin,
            training=config,
        )
        keys = ("training", "training_stats", "pair_stats")
        provenance = {key: saved.config[key] for key in keys if key in saved.config}
        store = _Store(
            saved.weights,
            saved.config["encoder"]["name"],
            tuple(saved.passage_ids),
            saved.passage_vectors,
            saved.passage_transformed,
            provenance,
            saved.fingerprint,
            pair_source,
        )
        reranker._store = cls._checked(store, encoder)
        return reranker
