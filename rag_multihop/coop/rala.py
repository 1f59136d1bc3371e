"""RaLa, ranking by contrasting layers: a late-interaction reranker over encoder hidden states.

:class:`RaLaReranker` rescores first-stage candidates with one of the registered scorings
(:data:`SCORINGS`, pure functions of :mod:`rag_multihop.coop.late_interaction`):

- ``"maxsim"``: late interaction on the last layer, no weight;
- ``"gap-weighted"``: Eq. 4, MaxSim times the gap-aware weight of the passage;
- ``"layer-gap"``: Eq. 3, MaxSim over per-token gaps between the last and premature layers.

Passage token states come from a :class:`~rag_multihop.coop.store.PassageStates` built at
indexing time when one is given, else the encoder computes them for the candidates at query
time. The query's states are computed per query. Every output candidate keeps its incoming
signals and gains ``"rala"`` (its RaLa score) and ``"maxsim"``, plus ``"gap_weight"`` and
``"premature_layer"`` for the gap-weighted scoring.

Never below the first stage where the token-level contrast is weak
(:func:`~rag_multihop.margin.margin_order`): RaLa takes a rank from the first stage's order
only when its best remaining candidate leads the first stage's by ``first_stage_margin``
(0.02 in MaxSim); a rank the first stage kept is
marked ``"first_stage"``. Scores are the RaLa scores, lowered where needed so that they
decrease with rank.

Example (needs the ``encoders`` extra; the bundled MiniLM):
    >>> from rag_multihop.encoders.sentence_transformer import default_encoder
    >>> rala = RaLaReranker(HiddenStateEncoder(default_encoder()))            # doctest: +SKIP
    >>> ranked = rala.rerank(Query("Who directed Polish Wedding?"), candidates)  # doctest: +SKIP
    >>> ranked[0].signals["rala"], ranked[0].signals["dense"]                  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop._settings import resolve_settings
from rag_multihop.coop.late_interaction import (
    candidate_layers,
    gap_weights,
    layer_gap_maxsim,
    maxsim_batch,
    pool_idf,
)
from rag_multihop.coop.settings import SCORING_NAMES, RaLaSettings
from rag_multihop.coop.states import HiddenStateEncoder, LayerEncoder, StateLayout, TokenStates
from rag_multihop.coop.store import PassageStates
from rag_multihop.encoders.fingerprint import FINGERPRINT_TOLERANCE
from rag_multihop.margin import margin_ranked
from rag_multihop.protocols import Retriever
from rag_multihop.reranked import RerankedRetriever
from rag_multihop.tracing import span
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_candidates, check_positive_int, check_query

if TYPE_CHECKING:
    from rag_multihop.coop.indexed import IndexedStates

logger = logging.getLogger(__name__)

ScoringFunction = Callable[
    [TokenStates, Sequence[TokenStates], np.ndarray | None], dict[str, np.ndarray]
]
"""(query states, passage states, query-token weights or None) -> arrays by signal name;
``"rala"`` is the score."""


@dataclass(frozen=True)
class Scoring:
    """A registered RaLa scoring and the states it reads."""

    name: str
    description: str
    function: ScoringFunction
    token_candidates: bool  # needs token vectors at the premature layers
    pooled: bool  # needs pooled vectors at the last and premature layers


def _maxsim(
    query: TokenStates, passages: Sequence[TokenStates], weights: np.ndarray | None
) -> dict[str, np.ndarray]:
    scores = maxsim_batch(query.tokens[0], [p.tokens[0] for p in passages], weights)
    return {"rala": scores, "maxsim": scores}


def _gap_weighted(
    query: TokenStates, passages: Sequence[TokenStates], weights: np.ndarray | None
) -> dict[str, np.ndarray]:
    scores = maxsim_batch(query.tokens[0], [p.tokens[0] for p in passages], weights)
    pooled = np.stack([p.pooled for p in passages]).astype(np.float32)
    gap, premature = gap_weights(query.pooled[0].astype(np.float32), pooled)
    cosines = pooled.astype(np.float64) @ query.pooled[0].astype(np.float64)
    return {
        "rala": scores * gap,
        "maxsim": scores,
        "gap_weight": gap,
        "last_similarity": cosines[:, 0],
        "premature_similarity": cosines[np.arange(len(cosines)), premature],
        "premature_position": premature.astype(np.float64),
    }


def _layer_gap(
    query: TokenStates, passages: Sequence[TokenStates], weights: np.ndarray | None
) -> dict[str, np.ndarray]:
    scores = layer_gap_maxsim(
        query.tokens, [p.tokens.astype(np.float32) for p in passages], weights
    )
    plain = maxsim_batch(query.tokens[0], [p.tokens[0] for p in passages], weights)
    return {"rala": scores, "maxsim": plain}


SCORINGS: Mapping[str, Scoring] = MappingProxyType(
    {
        "maxsim": Scoring(
            "maxsim", "late interaction on the last layer, no weight", _maxsim, False, False
        ),
        "gap-weighted": Scoring(
            "gap-weighted", "Eq. 4: MaxSim x gap-aware weight", _gap_weighted, False, True
        ),
        "layer-gap": Scoring(
            "layer-gap", "Eq. 3: MaxSim over last-vs-premature token gaps", _layer_gap, True, False
        ),
    }
)
"""Every RaLa scoring by name (the names of :data:`~rag_multihop.coop.settings.SCORING_NAMES`)."""
if tuple(SCORINGS) != SCORING_NAMES:  # one list of names for settings and registry
    raise ImportError(f"RaLa scorings {tuple(SCORINGS)} differ from {SCORING_NAMES}")


def resolve_layers(settings: RaLaSettings, n_layers: int) -> tuple[int, tuple[int, ...]]:
    """(the scoring layer, the premature candidate layers) for an encoder of ``n_layers``.

    >>> resolve_layers(RaLaSettings(buckets=2), 6)
    (6, (1, 4))
    >>> resolve_layers(RaLaSettings(layer=9), 6)
    Traceback (most recent call last):
    ...
    ValueError: layer 9 does not exist: the encoder has hidden states 0 (embeddings) to 6
    """
    layer = n_layers if settings.layer is None else settings.layer
    if not 1 <= layer <= n_layers:
        raise ValueError(
            f"layer {layer} does not exist: the encoder has hidden states 0 (embeddings) to "
            f"{n_layers}"
        )
    if settings.candidate_layers is not None:
        early = settings.candidate_layers
        if max(early) >= layer:
            raise ValueError(f"candidate_layers {early} must lie below the scoring layer {layer}")
        return layer, early
    buckets = min(settings.buckets, layer)
    return layer, candidate_layers(layer, buckets=buckets, seed=settings.seed)


def state_layout(settings: RaLaSettings, n_layers: int) -> StateLayout:
    """The layers a scoring reads, for an encoder of ``n_layers``."""
    layer, early = resolve_layers(settings, n_layers)
    scoring = SCORINGS[settings.scoring]
    return StateLayout(
        token_layers=(layer, *early) if scoring.token_candidates else (layer,),
        pooled_layers=(layer, *early) if scoring.pooled else (),
    )


class RaLaReranker:
    """Reranks candidates by contrasting layers (see the module docstring).

    Args:
        encoder: a :class:`~rag_multihop.coop.states.HiddenStateEncoder`, or anything it
            accepts (a sentence-transformers model, its path, a ``SentenceTransformerEncoder``).
        settings: a :class:`~rag_multihop.coop.settings.RaLaSettings`.
        scoring, layer, buckets, candidate_layers, seed, pooling, token_weighting,
            drop_punctuation, candidates, first_stage_margin: override the same-named field
            of ``settings`` (``None`` keeps it).
        store: passage states precomputed with this reranker's :attr:`layout` and encoder;
            candidates missing from it are encoded at query time (counted in
            ``encoded_at_query_time``). A store is checked when it is first used (given here
            or assigned to :attr:`store` later): another layout, or states of another model
            (its fingerprint, :attr:`PassageStates.fingerprint`, is not reproduced by this
            encoder, even one of the same dimension) raise ``ValueError``. A store saved
            without a fingerprint is accepted when the encoder names match, with a warning.
    """

    def __init__(
        self,
        encoder: Any,
        *,
        settings: RaLaSettings | None = None,
        scoring: str | None = None,
        layer: int | None = None,
        buckets: int | None = None,
        candidate_layers: tuple[int, ...] | None = None,
        seed: int | None = None,
        pooling: str | None = None,
        token_weighting: str | None = None,
        drop_punctuation: bool | None = None,
        candidates: int | None = None,
        codec: str | None = None,
        first_stage_margin: float | None = None,
        store: PassageStates | IndexedStates | None = None,
    ) -> None:
        self.settings = resolve_settings(
            RaLaSettings,
            settings,
            scoring=scoring,
            layer=layer,
            buckets=buckets,
            candidate_layers=candidate_layers,
            seed=seed,
            pooling=pooling,
            token_weighting=token_weighting,
            drop_punctuation=drop_punctuation,
            candidates=candidates,
            codec=codec,
            first_stage_margin=first_stage_margin,
        )
        self.encoder = (
            encoder if isinstance(encoder, HiddenStateEncoder) else HiddenStateEncoder(encoder)
        )
        self.store: PassageStates | IndexedStates | None = store
        self.encoded_at_query_time = 0
        self._layout: StateLayout | None = None
        self._checked_store: PassageStates | IndexedStates | None = None

    @property
    def scoring(self) -> Scoring:
        return SCORINGS[self.settings.scoring]

    @property
    def layout(self) -> StateLayout:
        """The layers this reranker reads (loads the encoder to learn its depth)."""
        layout = self._own_layout()
        if self.store is not None and self.store is not self._checked_store:
            self._check_store(self.store, layout)
            self._checked_store = self.store
        return layout

    def _own_layout(self) -> StateLayout:
        if self._layout is None:
            self._layout = state_layout(self.settings, self.encoder.n_layers)
        return self._layout

    @property
    def pooling(self) -> str:
        return self.settings.pooling or self.encoder.pooling

    def _check_store(self, store: PassageStates | IndexedStates, layout: StateLayout) -> None:
        if store.layout != layout or (store.pooling != self.pooling and layout.pooled_layers):
            raise ValueError(
                f"the passage store holds token layers {store.layout.token_layers}, pooled "
                f"layers {store.layout.pooled_layers} ({store.pooling}); these settings read "
                f"{layout.token_layers}, {layout.pooled_layers} ({self.pooling}): build it with "
                "PassageStates.build(passages, encoder, reranker.layout, pooling=...)"
            )
        if store.drop_punctuation != self.settings.drop_punctuation:
            raise ValueError(
                f"the passage store was built with drop_punctuation={store.drop_punctuation}, "
                f"the settings say {self.settings.drop_punctuation}"
            )
        self._check_store_encoder(store, layout.token_layers[0])

    def _check_store_encoder(self, store: PassageStates | IndexedStates, layer: int) -> None:
        """``ValueError`` unless the store holds this encoder's states (by fingerprint; by
        name, with a warning, for a store saved without one)."""
        built = f"the passage store holds states of encoder {store.encoder_name!r}"
        fix = (
            "build the store with this reranker (reranker.build_store(passages)) or use the "
            "encoder the store was built with"
        )
        if store.dim != self.encoder.dim:
            raise ValueError(
                f"{built} (dim {store.dim}) but this reranker's encoder {self.encoder.name!r} "
                f"has dim {self.encoder.dim}: {fix}"
            )
        if store.fingerprint is not None:
            similarity = store.fingerprint.similarity(LayerEncoder(self.encoder, layer))
            if similarity < 1.0 - FINGERPRINT_TOLERANCE:
                raise ValueError(
                    f"{built} but this reranker's encoder {self.encoder.name!r} (also dim "
                    f"{self.encoder.dim}) is a different model: its layer-{layer} states of the "
                    f"store's probe texts differ (lowest cosine {similarity:.3f}; the same model "
                    f"gives at least {1.0 - FINGERPRINT_TOLERANCE:.2f}): {fix}"
                )
            return
        if store.encoder_name != self.encoder.name:
            raise ValueError(
                f"{built} but this reranker's encoder is {self.encoder.name!r}. The store has "
                "no encoder fingerprint (saved by an older rag-multihop), so only names can be "
                f"compared: {fix}"
            )
        logger.warning(
            "the passage store has no encoder fingerprint (saved by an older rag-multihop): "
            "encoder %r is accepted by its name only; build and save the store again to "
            "record the fingerprint",
            self.encoder.name,
        )

    def build_store(self, passages: Sequence[Any], *, show_progress: bool = False) -> PassageStates:
        """Precompute the states of ``passages`` in this reranker's layout and keep them."""
        self.store = self._checked_store = PassageStates.build(
            passages,
            self.encoder,
            self._own_layout(),
            pooling=self.pooling,
            drop_punctuation=self.settings.drop_punctuation,
            show_progress=show_progress,
            codec=self.settings.codec,
        )
        return self.store

    def query_states(self, text: str) -> TokenStates:
        """The query's states (every token kept)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"the query text must be a non-empty string, got {text!r}")
        return self.encoder.encode([text], self.layout, pooling=self.pooling)[0]

    def passage_states(self, candidates: Sequence[Candidate]) -> list[TokenStates]:
        """Candidates' states: from the store, else encoded now."""
        layout = self.layout
        found: list[TokenStates | None] = (
            self.store.get([c.id for c in candidates])
            if self.store is not None
            else [None] * len(candidates)
        )
        missing = [i for i, s in enumerate(found) if s is None]
        if missing:
            fresh = self.encoder.encode(
                [candidates[i].passage.embedding_text for i in missing],
                layout,
                drop_punctuation=self.settings.drop_punctuation,
                pooling=self.pooling,
            )
            self.encoded_at_query_time += len(missing)
            for i, states in zip(missing, fresh, strict=True):
                found[i] = states
        return [s for s in found if s is not None]

    def score(self, query: Query, candidates: Sequence[Candidate]) -> dict[str, np.ndarray]:
        """The scoring's arrays for ``candidates`` (``"rala"`` is the score)."""
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            return {"rala": np.zeros(0)}
        with span("rala.states", candidates=len(candidates)) as record:
            encoded = self.encoded_at_query_time
            states = self.query_states(query.text)
            passages = self.passage_states(candidates)
            record.set(encoded_at_query_time=self.encoded_at_query_time - encoded)
        with span("rala.score", candidates=len(candidates), scoring=self.settings.scoring):
            weights = (
                pool_idf(states.ids, [p.ids for p in passages])
                if self.settings.token_weighting == "pool-idf"
                else None
            )
            return self.scoring.function(states, passages, weights)

    def rerank(
        self, query: Query, candidates: Sequence[Candidate], top_n: int | None = None
    ) -> list[Candidate]:
        """``candidates`` rescored by RaLa, best first; at most ``top_n`` when given.

        An empty list gives an empty list; ``top_n`` above the number of candidates returns
        them all. Duplicate passage ids raise ``ValueError``.
        """
        if top_n is not None:
            top_n = check_positive_int(top_n, "top_n")
        query, candidates = check_query(query), check_candidates(candidates)
        if not candidates:
            return []
        ids = [c.id for c in candidates]
        if len(set(ids)) != len(ids):
            raise ValueError("candidates contain duplicate passage ids")
        arrays = self.score(query, candidates)
        layout = self.layout
        early = layout.pooled_layers[1:] or layout.token_layers[1:]
        rescored = []
        for i, candidate in enumerate(candidates):
            signals = {name: float(values[i]) for name, values in arrays.items()}
            position = signals.pop("premature_position", None)
            if position is not None:
                signals["premature_layer"] = float(early[int(position) - 1])
            rescored.append(candidate.with_score(signals["rala"], **signals))
        margin = self.settings.first_stage_margin
        if margin == 0:
            return rank_candidates(rescored, top_n)
        first_scores = [c.score for c in candidates]
        return margin_ranked(first_scores, rescored, arrays["rala"], margin, top_n)


class RaLaRetriever(RerankedRetriever):
    """A first-stage retriever's top ``candidates`` (K), reranked by RaLa; a core ``Retriever``
    (a :class:`~rag_multihop.reranked.RerankedRetriever`).

    ``candidates`` defaults to the reranker's ``settings.candidates``; ``retrieve(query, k)``
    returns the best ``min(k, K)`` after reranking (a pool smaller than K is reranked whole).
    """

    reranker: RaLaReranker
    trace_name = "rala"

    def __init__(
        self, base: Retriever, reranker: RaLaReranker, *, candidates: int | None = None
    ) -> None:
        depth = reranker.settings.candidates if candidates is None else candidates
        super().__init__(base, reranker, candidates=depth)
