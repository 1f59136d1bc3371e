"""Run registered methods on one dataset with shared embeddings and score them.

Every method sees the same passage and query vectors (embedded once, cached on disk) and is
asked for the same number of candidates per question. A built retriever that saw gold labels
of the evaluated questions says so with a true ``uses_evaluated_gold`` attribute; the result
records it and the reports mark the method. Latency is the wall time of one
``retrieve`` call with the query vector already computed, so it measures the method, not the
encoder.

Example (a tiny corpus and the test helpers' hashing encoder):
    >>> from rag_multihop import Corpus, Passage
    >>> from rag_multihop.eval.datasets import Dataset, QAExample
    >>> from rag_multihop.testing import HashingEncoder
    >>> corpus = Corpus([Passage("x", "red apples"), Passage("y", "blue sky")])
    >>> question = QAExample("q1", "apples?", ("x",), ("x",), False)
    >>> data = Dataset("toy", corpus, (question,), "native")
    >>> result = run_benchmark(data, ["dense"], encoder=HashingEncoder(), ks=(1, 2))
    >>> result.methods["dense"].recall[1]
    1.0
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.eval.context import BenchContext, build_context
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.methods import check_options, get_method
from rag_multihop.eval.metrics import (
    all_recall_at_k,
    exact_match,
    f1_score,
    last_hop_recall_at_k,
    recall_at_k,
)
from rag_multihop.types import Candidate
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

DEFAULT_KS = (1, 2, 5, 10, 20)


@dataclass
class MethodResult:
    """Per-question scores of one method and their means (fractions in [0, 1])."""

    name: str
    family: str
    description: str
    per_question_recall: dict[int, np.ndarray]
    per_question_all_recall: dict[int, np.ndarray]
    per_question_last_hop: dict[int, np.ndarray]
    latencies_ms: np.ndarray
    build_seconds: float
    candidates: list[list[Candidate]] = field(repr=False)
    extras: dict[str, Any] = field(default_factory=dict)
    uses_evaluated_gold: bool = False
    """The method used gold labels of the evaluated questions (e.g. transductive AAR): its
    numbers are not comparable with label-free methods; reports mark it."""
    per_question_em: np.ndarray | None = None
    per_question_f1: np.ndarray | None = None
    """Exact match and token F1 of the method's answers, for methods that answer (their
    retriever exposes ``answers``, a mapping from question id to answer text)."""

    @property
    def rankings(self) -> list[list[str]]:
        """Passage ids per question, best first."""
        return [[c.passage.id for c in row] for row in self.candidates]

    @property
    def recall(self) -> dict[int, float]:
        return {k: float(v.mean()) for k, v in self.per_question_recall.items()}

    @property
    def all_recall(self) -> dict[int, float]:
        return {k: float(v.mean()) for k, v in self.per_question_all_recall.items()}

    @property
    def last_hop_recall(self) -> dict[int, float]:
        return {k: float(v.mean()) for k, v in self.per_question_last_hop.items() if v.size}


@dataclass
class BenchResult:
    dataset: Dataset
    encoder_name: str
    ks: tuple[int, ...]
    methods: dict[str, MethodResult]
    embed_seconds: float


def _scores(
    metric: Callable[[Sequence[str], Sequence[str], int], float],
    pairs: Iterable[tuple[list[str], QAExample]],
    k: int,
) -> np.ndarray:
    return np.array([metric(ranking, question.gold_ids, k) for ranking, question in pairs])


def run_method(
    context: BenchContext, name: str, ks: Sequence[int], *, show_progress: bool = False
) -> MethodResult:
    """Build method ``name`` on ``context`` and score it on every question."""
    spec = get_method(name)
    start = time.perf_counter()
    retriever = spec.build(context)
    build_seconds = time.perf_counter() - start
    depth = max(ks)
    questions = context.dataset.questions
    candidates: list[list[Candidate]] = []
    latencies = np.zeros(len(questions))
    queries = context.queries()
    iterator: Any = queries
    if show_progress:
        from tqdm.auto import tqdm

        iterator = tqdm(queries, desc=name, unit="q")
    for i, query in enumerate(iterator):
        t0 = time.perf_counter()
        found = retriever.retrieve(query, k=depth)
        latencies[i] = (time.perf_counter() - t0) * 1000.0
        candidates.append(found)
    rankings = [[c.passage.id for c in row] for row in candidates]
    ordered = [(r, q) for r, q in zip(rankings, questions, strict=True) if q.hop_ordered]
    recall = {k: _scores(recall_at_k, zip(rankings, questions, strict=True), k) for k in ks}
    all_recall = {k: _scores(all_recall_at_k, zip(rankings, questions, strict=True), k) for k in ks}
    last_hop = {k: _scores(last_hop_recall_at_k, ordered, k) for k in ks}
    extras = dict(getattr(retriever, "bench_extras", lambda: {})())
    em, f1 = answer_scores(getattr(retriever, "answers", None), questions)
    return MethodResult(
        name,
        spec.family,
        spec.description,
        recall,
        all_recall,
        last_hop,
        latencies,
        build_seconds,
        candidates,
        extras,
        uses_evaluated_gold=bool(getattr(retriever, "uses_evaluated_gold", False)),
        per_question_em=em,
        per_question_f1=f1,
    )


def answer_scores(
    answers: Mapping[str, str] | None, questions: Sequence[QAExample]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per-question exact match and token F1 of ``answers`` (question id -> text) against
    each question's answers; a question without an answer scores 0. ``(None, None)`` when
    the method gives no answers or the dataset has none.

    >>> from rag_multihop.eval.datasets import QAExample
    >>> q = QAExample("q1", "Who?", ("Ada Lovelace",), ("p",), False)
    >>> answer_scores({"q1": "Lovelace"}, [q])
    (array([0.]), array([0.66666667]))
    """
    if not isinstance(answers, Mapping) or not any(q.answers for q in questions):
        return None, None
    em = np.array([exact_match(answers.get(q.id, ""), q.answers) for q in questions])
    f1 = np.array([f1_score(answers.get(q.id, ""), q.answers) for q in questions])
    return em, f1


def run_benchmark(
    dataset: Dataset,
    methods: Sequence[str],
    *,
    encoder: Encoder,
    ks: Sequence[int] = DEFAULT_KS,
    options: dict[str, Any] | None = None,
    show_progress: bool = False,
) -> BenchResult:
    """Run ``methods`` on ``dataset`` with shared embeddings; see :class:`BenchResult`."""
    if not methods:
        raise ValueError("no methods given; name at least one (see `rag-multihop bench --list`)")
    ks = tuple(sorted({check_positive_int(k, "k") for k in ks}))
    for name in methods:
        get_method(name)  # fail before embedding if a name is unknown
    check_options(options or {})
    context, embed_seconds = build_context(
        dataset, encoder, options=options, show_progress=show_progress
    )
    results = {}
    for name in methods:
        logger.info("running %s on %s", name, dataset.name)
        results[name] = run_method(context, name, ks, show_progress=show_progress)
    return BenchResult(dataset, encoder.name, ks, results, embed_seconds)
