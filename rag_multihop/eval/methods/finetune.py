"""The ``dense-ft`` and ``rala-ft`` benchmark methods: CoopRAG's fine-tuned retriever (§3.6).

Held-out protocol: the encoder is fine-tuned on the questions of the tune half (kept in
``dataset.held_out`` by ``--split test``) and evaluated on the test half only; any other split
is refused, since it would evaluate questions the encoder was trained on. Each tune question
gives one triple per gold passage, with the base encoder's highest-ranked non-gold passage
as hard negative, weighted by its gold-passage count (the LLM-free stand-in for the number
of sub-questions). The corpus and the test questions are then embedded again with the
fine-tuned encoder, named ``<base>-ft-<weight fingerprint>`` so its embedding and token-state
caches never mix with the base encoder's.

- ``dense-ft``: exact dense search with the fine-tuned encoder.
- ``rala-ft``: RaLa (the run's ``rala_*`` options) over ``dense-ft``'s top-K, on the
  fine-tuned encoder's hidden states.

Options (``--option KEY=VALUE``, :class:`~rag_multihop.coop.settings.FineTuneSettings`):
``ft_epochs``, ``ft_batch_size``, ``ft_learning_rate``, ``ft_temperature``, ``ft_weighting``
(``hops`` / ``uniform``), ``ft_max_length``, ``ft_seed``, ``ft_threads``. The trained model is
kept under ``$RAG_MULTIHOP_CACHE/finetuned/<recipe hash>`` and reused by later runs.

Example:
    >>> FT_OPTIONS.read({"ft_epochs": "2", "ft_weighting": "uniform"}).weighting
    'uniform'
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from rag_multihop.coop.finetune import FineTuneResult, Triple, difficulty_weights, fine_tune
from rag_multihop.coop.settings import FineTuneSettings
from rag_multihop.encoders.cache import CachedEncoder
from rag_multihop.eval.context import BenchContext, build_context
from rag_multihop.eval.datasets import QAExample
from rag_multihop.eval.methods.rala import RaLaBenchRetriever, build_rala
from rag_multihop.eval.registry import declare_settings, register_method
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.paths import cache_dir
from rag_multihop.types import Candidate, Query

logger = logging.getLogger(__name__)

FT_OPTIONS = declare_settings("coop-finetune", FineTuneSettings, prefix="ft_")
"""``ft_*`` options: every :class:`FineTuneSettings` field."""


def training_triples(
    context: BenchContext, questions: Sequence[QAExample]
) -> tuple[list[Triple], list[int]]:
    """One triple per gold passage of each question in ``questions`` (hard negative: the
    base encoder's best non-gold passage), and each triple's question's gold count."""
    corpus = context.dataset.corpus
    vectors = context.encoder.encode([q.question for q in questions])
    known = [q for q in questions if all(g in corpus for g in q.gold_ids)]
    if len(known) < len(questions):
        logger.warning(
            "%d training questions name gold passages outside the corpus; skipped",
            len(questions) - len(known),
        )
    depth = min(len(corpus), 1 + max((len(q.gold_ids) for q in questions), default=0))
    _, ids = context.dense.index.search(vectors, depth)
    triples: list[Triple] = []
    counts: list[int] = []
    for question, row in zip(questions, ids, strict=True):
        gold = set(question.gold_ids)
        if question not in known or not gold:
            continue
        negative = next((pid for pid in row if pid not in gold), None)
        if negative is None:
            continue
        for gold_id in question.gold_ids:
            triples.append(
                Triple(
                    question.id,
                    question.question,
                    corpus[gold_id].embedding_text,
                    corpus[negative].embedding_text,
                )
            )
            counts.append(len(question.gold_ids))
    return triples, counts


def _recipe_key(settings: FineTuneSettings, triples: Sequence[Triple], base: str) -> str:
    digest = hashlib.sha256(
        json.dumps({"base": base, "settings": asdict(settings)}, sort_keys=True).encode()
    )
    for triple in triples:
        digest.update("\0".join(asdict(triple).values()).encode() + b"\1")
    return digest.hexdigest()[:20]


def check_split(context: BenchContext, method: str) -> tuple[QAExample, ...]:
    """The tune questions to train on; ``ValueError`` unless the run evaluates ``--split
    test`` (so no trained-on question is evaluated)."""
    dataset = context.dataset
    if dataset.split != "test" or not dataset.held_out:
        raise ValueError(
            f"{method} fine-tunes the encoder on the tune half of the questions and evaluates "
            f"the test half: run it with --split test (this run's split is {dataset.split!r}, "
            "which would evaluate questions the encoder was trained on)"
        )
    return dataset.held_out


def fine_tuned_context(context: BenchContext, method: str) -> tuple[BenchContext, dict[str, Any]]:
    """The run's dataset embedded by the encoder fine-tuned on the tune half (trained once per
    run and recipe, kept on disk), and the training report."""
    tune = check_split(context, method)
    settings = FT_OPTIONS.read(context.options)
    return context.memo(
        f"ft-context:{settings!r}", lambda: _fine_tune(context, method, tune, settings)
    )


def _fine_tune(
    context: BenchContext,
    method: str,
    tune: Sequence[QAExample],
    settings: FineTuneSettings,
) -> tuple[BenchContext, dict[str, Any]]:
    from rag_multihop.encoders.sentence_transformer import SentenceTransformerEncoder

    base = context.raw_encoder
    if not isinstance(base, SentenceTransformerEncoder):
        raise ValueError(f"{method} fine-tunes a sentence-transformers encoder, got {base.name!r}")
    triples, counts = training_triples(context, tune)
    weights = difficulty_weights(counts, settings.weighting)
    folder = cache_dir("finetuned") / _recipe_key(settings, triples, base.name)
    meta = folder / "finetune.json"
    if meta.is_file():
        result = FineTuneResult(**{**json.loads(meta.read_text()), "path": folder})
        logger.info("reusing the fine-tuned encoder %s", folder)
    else:
        result = fine_tune(
            base.model_name_or_path,
            triples,
            weights.tolist(),
            folder,
            settings=settings,
            base_name=base.name,
        )
        meta.write_text(json.dumps(result.report(), indent=2))
    encoder: Any = SentenceTransformerEncoder(
        str(folder), name=result.name, batch_size=base.batch_size, threads=base.threads
    )
    if isinstance(context.encoder, CachedEncoder):
        encoder = CachedEncoder(encoder, context.encoder.cache.directory.parent)
    tuned, embed_seconds = build_context(context.dataset, encoder, options=context.options)
    report = {
        "training": result.report(),
        "settings": asdict(settings),
        "train_questions": len(tune),
        "weights": {
            "min": round(float(weights.min()), 3),
            "max": round(float(weights.max()), 3),
        },
        "embed_seconds": round(embed_seconds, 1),
    }
    return tuned, report


class FineTunedDense:
    """Dense search over the fine-tuned encoder's vectors; a query is searched with its
    question's fine-tuned vector (the harness's query vectors are the base encoder's)."""

    def __init__(self, context: BenchContext, report: dict[str, Any]) -> None:
        self.context = context
        self.report = report
        self.dense: DenseRetriever = context.dense
        self._vectors = {q.id: i for i, q in enumerate(context.dataset.questions)}

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        row = self._vectors.get(str(query.id))
        embedding = None if row is None else self.context.query_vectors[row]
        return self.dense.retrieve(replace(query, embedding=embedding), k=k)

    def bench_extras(self) -> dict[str, Any]:
        return dict(self.report)


@register_method(
    "dense-ft",
    "dense search, encoder fine-tuned on the tune half (CoopRAG §3.6; --split test)",
    requires=["test-split"],
)
def build_dense_ft(context: BenchContext) -> FineTunedDense:
    tuned, report = fine_tuned_context(context, "dense-ft")
    return FineTunedDense(tuned, report)


@register_method(
    "rala-ft",
    "RaLa over dense-ft's top-100 on the fine-tuned encoder (--split test)",
    requires=["test-split"],
)
def build_rala_ft(context: BenchContext) -> RaLaBenchRetriever:
    tuned, report = fine_tuned_context(context, "rala-ft")
    return build_rala(tuned, FineTunedDense(tuned, report), "dense-ft")
