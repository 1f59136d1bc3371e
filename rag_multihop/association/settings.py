"""Every knob of association reranking (AAR), with its default, validated once.

Training hyperparameters are a separate object,
:class:`~rag_multihop.association.training.TrainingConfig`: they shape the model once, at
``fit``, and are saved with it as provenance, while these settings only decide how a fitted
model scores (a saved model is rescored under many of them without retraining).

Example:
    >>> AssociationSettings().lambda_, AssociationSettings().mode
    (0.5, 'mixed')
    >>> AssociationSettings(lambda_=1.5)
    Traceback (most recent call last):
    ...
    ValueError: lambda_ must be in [0, 1], got 1.5
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_multihop.association.model import DEFAULT_LAMBDA, DEFAULT_MODE, get_scoring_mode
from rag_multihop.validation import check_fraction, check_number, check_positive_int

DEFAULT_CANDIDATES = 100
"""K, the depth of the base retrieval that association reranks (the paper's value)."""


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
            against it carry the signal ``first_stage``). 0 (the default) is the plain
            blended order, right for a model trained on gold pairs; 0.02 suits one trained
            on label-free corpus pairs (tune halves, docs/benchmarks.md, corpus views).
    """

    lambda_: float = DEFAULT_LAMBDA
    mode: str = DEFAULT_MODE
    candidates: int = DEFAULT_CANDIDATES
    first_stage_margin: float = 0.0

    def __post_init__(self) -> None:
        check_fraction(self.lambda_, "lambda_")
        check_number(self.first_stage_margin, "first_stage_margin", low=0.0)
        get_scoring_mode(self.mode)
        check_positive_int(self.candidates, "candidates")
