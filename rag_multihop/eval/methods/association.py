"""The ``aar`` and ``aar-reverse`` benchmark methods.

Both rerank the shared dense top-K (FAISS) with an association model trained inside the
benchmark; they differ only in the scoring mode (``mixed`` / ``reverse``) and share one
trained model per setting through the context's memo. Options (``--option KEY=VALUE``,
:class:`AARBenchSettings`):

- ``protocol``: :data:`PROTOCOLS` (``transductive`` by default);
- ``pairs``: :data:`PAIR_SOURCES` (``gold`` by default);
- ``aar_relations``: label-free relations, comma-separated (default ``title-mention``);
- the scoring settings (:class:`~rag_multihop.association.settings.AssociationSettings`):
  ``aar_lambda`` (λ, 0.5), ``aar_candidates`` (K, 100), ``aar_first_stage_margin`` (default
  ``none``: chosen from the model's pair source, 0.02 for ``pairs=corpus``, 0 otherwise);
- the training hyperparameters (:class:`~rag_multihop.association.training.TrainingConfig`):
  ``aar_epochs`` (100), ``aar_seed`` (0; also seeds the ``shuffled`` control),
  ``aar_threads`` (torch threads while training; default 1), ``aar_batch_size``,
  ``aar_learning_rate``, ``aar_weight_decay``, ``aar_temperature``, ``aar_grad_clip``,
  ``aar_residual_init``.

``bench_extras()`` reports per trained model the pair statistics, its pair source and the
first-stage margin it reranks with, training statistics and the leakage (shares of the
evaluated questions' gold pairs and gold passages present in the training pairs), plus per
query the FAISS search time and the rerank time (precomputed f(p)).

Example:
    >>> AAR_OPTIONS.read({"protocol": "heldout", "aar_lambda": "0.4"}).scoring.lambda_
    0.4
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.association.pairs import (
    DEFAULT_CORPUS_RELATIONS,
    PairSet,
    check_relations,
    corpus_pairs,
    leakage,
)
from rag_multihop.association.reranker import AssociationReranker, rescore_candidates
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.association.training import TrainingConfig
from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.options import FLATTEN, OPTION
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.eval.report import summarize
from rag_multihop.eval.splits import FoldRouter
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_choice

logger = logging.getLogger(__name__)

PROTOCOLS: Mapping[str, str] = MappingProxyType(
    {
        "transductive": "train on the gold of every question, evaluate on all (the paper's "
        "main setting)",
        "heldout": "2-fold split of the questions by a fixed seed: train on one fold, evaluate "
        "the other, both ways",
    }
)
PAIR_SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "gold": "all pairs of each training question's gold passages",
        "shuffled": "the gold pairs with their second passages randomly permuted (control)",
        "corpus": "label-free title mentions from the corpus (no questions used)",
        "gold+corpus": "the union of gold and corpus pairs",
    }
)
HELDOUT_SEED = 0
"""Seed of the held-out 2-fold question split (fixed, so every run splits the same way)."""


@dataclass(frozen=True)
class AARBenchSettings:
    """The AAR methods' benchmark settings: how the run trains (protocol, pair source,
    label-free relations), the model's scoring settings and its training hyperparameters.
    The scoring mode is left out: ``aar`` and ``aar-reverse`` fix it."""

    protocol: str = field(default="transductive", metadata={OPTION: "protocol"})
    pairs: str = field(default="gold", metadata={OPTION: "pairs"})
    relations: tuple[str, ...] = DEFAULT_CORPUS_RELATIONS
    scoring: AssociationSettings = field(
        default_factory=AssociationSettings, metadata={FLATTEN: True}
    )
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={FLATTEN: True})

    def __post_init__(self) -> None:
        check_choice(self.protocol, "protocol", PROTOCOLS)
        check_choice(self.pairs, "pairs", PAIR_SOURCES)
        object.__setattr__(self, "relations", check_relations(self.relations))

    @property
    def uses_evaluated_gold(self) -> bool:
        """Whether training sees gold labels of the questions it is evaluated on."""
        return self.protocol == "transductive" and self.pairs != "corpus"

    def report(self) -> dict[str, Any]:
        """The settings as ``bench_extras`` shows them."""
        return {
            "protocol": self.protocol,
            "pairs": self.pairs,
            "relations": list(self.relations),
            "lambda": self.scoring.lambda_,
            "candidates": self.scoring.candidates,
            "training": self.training.to_dict(),
        }


AAR_OPTIONS = declare_settings("association", AARBenchSettings, prefix="aar_", exclude={"mode"})
"""The AAR family's ``--option`` keys (shared with ``bridge-aar``)."""


def heldout_folds(
    questions: Sequence[QAExample], seed: int = HELDOUT_SEED
) -> tuple[tuple[QAExample, ...], tuple[QAExample, ...]]:
    """Two halves of ``questions``, split by a seeded permutation."""
    order = np.random.default_rng(seed).permutation(len(questions))
    half = len(questions) // 2
    return (
        tuple(questions[i] for i in sorted(order[:half])),
        tuple(questions[i] for i in sorted(order[half:])),
    )


def training_pairs(
    context: BenchContext, settings: AARBenchSettings, questions: Sequence[QAExample]
) -> PairSet:
    """The pairs of ``settings.pairs`` for training on ``questions``."""
    gold = PairSet.from_gold(questions)
    if settings.pairs == "gold":
        return gold
    if settings.pairs == "shuffled":
        return gold.shuffled(settings.training.seed)
    label_free = context.memo(
        f"aar-corpus-pairs:{','.join(settings.relations)}",
        lambda: corpus_pairs(context.dataset.corpus, settings.relations),
    )
    return label_free if settings.pairs == "corpus" else gold | label_free


@dataclass(frozen=True)
class _Model:
    """A trained reranker, the questions it evaluates and its report for ``bench_extras``."""

    reranker: AssociationReranker | None
    """``None`` when there was no pair to train on: its questions keep the dense order."""
    eval_question_ids: tuple[str, ...]
    report: dict[str, Any]


def _train(
    context: BenchContext,
    settings: AARBenchSettings,
    fold: str,
    train: Sequence[QAExample],
    evaluate: Sequence[QAExample],
) -> _Model:
    """The model trained on ``train``'s pairs (``fold`` names it), evaluated on ``evaluate``.

    Models are memoised in the context (:meth:`BenchContext.memo`), so ``aar``,
    ``aar-reverse`` and ``bridge-aar`` share them; label-free pairs use no questions, so every
    fold shares one model.
    """
    label_free = settings.pairs == "corpus"
    key = (
        f"aar-model:{settings.pairs}:{','.join(settings.relations)}:{settings.training!r}:"
        f"{'label-free' if label_free else fold}"
    )

    def fit() -> tuple[AssociationReranker | None, PairSet]:
        pairs = training_pairs(context, settings, train)
        reranker = None
        if len(pairs):
            reranker = AssociationReranker(training=settings.training).fit(
                context.dataset.corpus.ids,
                context.passage_vectors,
                pairs,
                encoder_name=context.encoder.name,
            )
        else:
            logger.warning(
                "no %s pairs to train AAR on (fold %s): its questions keep the dense order",
                settings.pairs,
                fold,
            )
        return reranker, pairs

    reranker, pairs = context.memo(key, fit)
    report = {
        "train_questions": 0 if label_free else len(train),
        "eval_questions": len(evaluate),
        "pair_stats": pairs.stats().to_dict(),
        "pair_source": pairs.pair_source,
        "first_stage_margin": settings.scoring.margin_for(pairs.pair_source),
        "training_stats": None if reranker is None else reranker.provenance["training_stats"],
        "kept_first_stage": reranker is None,
        "leakage": leakage(pairs, [q.gold_ids for q in evaluate]).to_dict(),
    }
    return _Model(reranker, tuple(q.id for q in evaluate), report)


class AssociationBenchRetriever:
    """Dense top-K by FAISS, reranked by the model trained for each question's fold.

    ``retrieve`` times the FAISS search, the association scoring (numpy: vectors by id, f(q),
    scores) and the whole rerank (scoring plus new ranked ``Candidate`` objects) separately.
    """

    def __init__(
        self,
        dense: DenseRetriever,
        models: Sequence[_Model],
        *,
        mode: str,
        settings: AARBenchSettings,
    ) -> None:
        self.dense = dense
        self.models = list(models)
        self.mode = mode
        self.settings = settings
        self._rerankers = FoldRouter(
            (
                model.eval_question_ids,
                None
                if model.reranker is None
                else model.reranker.with_settings(settings.scoring, mode=mode),
            )
            for model in self.models
        )
        self.faiss_ms: list[float] = []
        self.scoring_ms: list[float] = []
        self.rerank_ms: list[float] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        reranker = self._rerankers.route(query)
        vector = self.dense.query_vector(query)
        t0 = time.perf_counter()
        dense_scores, ids = self.dense.index.search(vector, self.settings.scoring.candidates)
        t1 = time.perf_counter()
        corpus = self.dense.corpus
        found = rank_candidates(
            Candidate(corpus[pid], float(s), signals={"dense": float(s)})
            for pid, s in zip(ids[0], dense_scores[0], strict=True)
        )
        t2 = time.perf_counter()
        if reranker is None:  # nothing learned: the first stage's order
            self.faiss_ms.append((t1 - t0) * 1000.0)
            return found[:k]
        scores = reranker.score(query, found)
        t3 = time.perf_counter()
        margin = reranker.first_stage_margin
        ranked = rescore_candidates(found, scores, top_n=k, first_stage_margin=margin)
        t4 = time.perf_counter()
        self.faiss_ms.append((t1 - t0) * 1000.0)
        self.scoring_ms.append((t3 - t2) * 1000.0)
        self.rerank_ms.append((t4 - t2) * 1000.0)
        return ranked

    @property
    def uses_evaluated_gold(self) -> bool:
        """Whether the models saw gold labels of the questions they evaluate."""
        return self.settings.uses_evaluated_gold

    def bench_extras(self) -> dict[str, Any]:
        """Settings, per-model training report and leakage, and per-query timings."""
        faiss_median = float(np.median(self.faiss_ms)) if self.faiss_ms else float("nan")
        rerank_median = float(np.median(self.rerank_ms)) if self.rerank_ms else float("nan")
        return {
            **self.settings.report(),
            "mode": self.mode,
            "models": [model.report for model in self.models],
            "training_seconds": round(
                sum(
                    m.report["training_stats"]["seconds"]
                    for m in self.models
                    if m.report["training_stats"]
                ),
                2,
            ),
            "faiss_search_ms": summarize(self.faiss_ms),
            "scoring_ms": summarize(self.scoring_ms),
            "rerank_ms": summarize(self.rerank_ms),
            "rerank_over_faiss": round(rerank_median / faiss_median, 3),
        }


def build(context: BenchContext, mode: str) -> AssociationBenchRetriever:
    """The AAR bench retriever for ``context`` under its options, scoring with ``mode``."""
    settings = AAR_OPTIONS.read(context.options)
    questions = context.dataset.questions
    if settings.protocol == "transductive":
        models = [_train(context, settings, "all", questions, questions)]
    else:
        first, second = heldout_folds(questions)
        models = [
            _train(context, settings, "fold-0", first, second),
            _train(context, settings, "fold-1", second, first),
        ]
    return AssociationBenchRetriever(context.dense, models, mode=mode, settings=settings)


@register_method("aar", "AAR: dense top-100 reranked by a learned association (mixed scoring)")
def build_aar(context: BenchContext) -> AssociationBenchRetriever:
    return build(context, "mixed")


@register_method("aar-reverse", "AAR with reverse scoring a = f(p)·q (the paper's variant)")
def build_aar_reverse(context: BenchContext) -> AssociationBenchRetriever:
    return build(context, "reverse")
