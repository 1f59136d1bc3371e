"""Association-augmented reranking (AAR): "Association ≠ Similarity" as a reranker.

A small MLP f learns which passages of *this* corpus are used together (gold pairs of
questions, co-access sessions, or label-free title mentions); a dense top-K is then
reranked by ``(1 − λ)·cos(q, p) + λ·a(q, p)`` with ``a = ½[f(q)·p + f(p)·q]`` (``mixed``) or
``f(p)·q`` (``reverse``). Training needs torch (``pip install 'rag-multihop[train]'``);
reranking needs numpy only. Importing this package does not import torch.

Modules: :mod:`.model` (f and the scoring modes as numpy functions), :mod:`.training`
(torch), :mod:`.pairs` (pair sources, statistics, leakage), :mod:`.persistence` (model
directories), :mod:`.reranker` (:class:`AssociationReranker`) and :mod:`.retriever`. The
bench methods live in :mod:`rag_multihop.eval.methods.association`, the ``rag-multihop aar``
command in :mod:`rag_multihop.cli.aar`.

Example (see ``docs/association.md``):
    >>> from rag_multihop.association import AssociationReranker, PairSet
    >>> pairs = PairSet.from_groups([["Film X", "Director Y"]], source="gold")
    >>> reranker = AssociationReranker(lambda_=0.5, mode="reverse")
    >>> len(pairs), reranker.is_fitted
    (1, False)
"""

from rag_multihop.association.model import (
    DEFAULT_LAMBDA,
    DEFAULT_MODE,
    SCORING_MODES,
    AssociationWeights,
    association_scores,
    association_transform,
    blend,
)
from rag_multihop.association.pairs import (
    CORPUS_RELATIONS,
    Leakage,
    PairSet,
    PairStats,
    corpus_pairs,
    leakage,
    load_pairs,
)
from rag_multihop.association.reranker import (
    AssociationReranker,
    AssociationScores,
    rescore_candidates,
)
from rag_multihop.association.retriever import DEFAULT_CANDIDATES, AssociationRetriever
from rag_multihop.association.signals import SIGNALS
from rag_multihop.association.training import TrainingConfig, TrainingStats

__all__ = [
    "CORPUS_RELATIONS",
    "DEFAULT_CANDIDATES",
    "DEFAULT_LAMBDA",
    "DEFAULT_MODE",
    "SCORING_MODES",
    "SIGNALS",
    "AssociationReranker",
    "AssociationRetriever",
    "AssociationScores",
    "AssociationWeights",
    "Leakage",
    "PairSet",
    "PairStats",
    "TrainingConfig",
    "TrainingStats",
    "association_scores",
    "association_transform",
    "blend",
    "corpus_pairs",
    "leakage",
    "load_pairs",
    "rescore_candidates",
]
