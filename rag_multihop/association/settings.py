"""Every knob of association reranking (AAR), with its default, validated once.

Training hyperparameters are a separate object,
:class:`~rag_multihop.association.training.TrainingConfig`: they shape the model once, at
``fit``, and are saved with it as provenance, while these settings only decide how a fitted
model scores (a saved model is rescored under many of them without retraining).

The first-stage margin follows how the model was trained unless it is given: a model records
its pair source (:data:`PAIR_SOURCES`) and :meth:`AssociationSettings.margin_for` picks the
margin for it.

Example:
    >>> AssociationSettings().lambda_, AssociationSettings().mode
    (0.5, 'mixed')
    >>> AssociationSettings().margin_for("corpus"), AssociationSettings().margin_for(None)
    (0.02, 0.0)
    >>> AssociationSettings(first_stage_margin=0.0).margin_for("corpus")
    0.0
    >>> AssociationSettings(lambda_=1.5)
    Traceback (most recent call last):
    ...
    ValueError: lambda_ must be in [0, 1], got 1.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rag_multihop.association.model import DEFAULT_LAMBDA, DEFAULT_MODE, get_scoring_mode
from rag_multihop.validation import check_fraction, check_number, check_positive_int

DEFAULT_CANDIDATES = 100
"""K, the depth of the base retrieval that association reranks (the paper's value)."""

LABEL_FREE = "corpus"
"""The pair source of a model trained only on pairs read from the corpus text
(:func:`~rag_multihop.association.pairs.corpus_pairs`): no labels."""
LABELLED = "labelled"
"""The pair source of a model trained on any labelled pairs: a question's gold passages,
sessions, a pairs file, pairs given by hand (alone or with corpus pairs)."""

PAIR_SOURCES: Mapping[str, float] = MappingProxyType({LABEL_FREE: 0.02, LABELLED: 0.0})
"""A model's recorded pair source -> the first-stage margin it gets by default. 0.02 lifts
label-free models above dense on chunked corpora and on three of four tune halves, and costs
gold-pair models 0.8–1.6 R@5 (docs/benchmarks.md, corpus views); a model that records no
source (saved before it was recorded) gets 0."""


@dataclass(frozen=True)
class AssociationSettings:
    """How a fitted association model scores.

    Attributes:
        lambda_: blend weight λ in [0, 1] of the association score:
            ``(1 − λ)·cos + λ·association``.
        mode: a scoring mode of :data:`~rag_multihop.association.model.SCORING_MODES`.
        candidates: K, how many base-retrieval candidates
            :class:`~rag_multihop.association.retriever.AssociationRetriever` reranks.
        first_stage_margin: association takes a rank from the incoming order only by this
            much of the blended score (:func:`~rag_multihop.margin.margin_order`; ranks kept
            against it carry the signal ``first_stage``); 0 is the plain blended order.
            ``None`` (the default): chosen from the model's pair source
            (:meth:`margin_for`).
    """

    lambda_: float = DEFAULT_LAMBDA
    mode: str = DEFAULT_MODE
    candidates: int = DEFAULT_CANDIDATES
    first_stage_margin: float | None = None

    def __post_init__(self) -> None:
        check_fraction(self.lambda_, "lambda_")
        if self.first_stage_margin is not None:
            try:
                check_number(self.first_stage_margin, "first_stage_margin", low=0.0)
            except ValueError as exc:
                raise ValueError(f"{exc} (or None: chosen from the model's pair source)") from None
        get_scoring_mode(self.mode)
        check_positive_int(self.candidates, "candidates")

    def margin_for(self, pair_source: str | None) -> float:
        """The first-stage margin for a model trained on ``pair_source`` pairs: the given
        ``first_stage_margin``, else :data:`PAIR_SOURCES`' margin (0 for an unknown source)."""
        if self.first_stage_margin is not None:
            return float(self.first_stage_margin)
        return PAIR_SOURCES.get(pair_source or "", 0.0)
