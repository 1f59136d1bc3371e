"""The context every benchmark method is built from: one dataset, its shared vectors, the
base retrievers and a memo of what methods build once per run.

Every method sees the same passage and query embeddings, so differences between methods come
from the methods alone.

Example (the toy corpus of :mod:`rag_multihop.testing`):
    >>> from rag_multihop import Corpus
    >>> from rag_multihop.eval.datasets import Dataset, QAExample
    >>> from rag_multihop.testing import HashingEncoder, polish_wedding_passages
    >>> gold = ("polish-wedding", "theresa-connelly")
    >>> question = QAExample("q1", "Who directed Polish Wedding?", (), gold, False)
    >>> data = Dataset("toy", Corpus(polish_wedding_passages()), (question,), "native")
    >>> context, seconds = build_context(data, HashingEncoder())
    >>> [c.id for c in context.dense.retrieve(context.queries()[0], k=1)]
    ['polish-wedding']
    >>> context.memo("answer", lambda: 42), context.memo("answer", lambda: 0)
    (42, 42)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.cache import CachedEncoder
from rag_multihop.eval.datasets import Dataset
from rag_multihop.eval.registry import declare_settings
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.types import Query

T = TypeVar("T")


@dataclass(frozen=True)
class BM25Settings:
    """Benchmark knobs of the ``bm25`` baseline.

    Attributes:
        stemmer: a PyStemmer language, or ``"none"`` for no stemming.
    """

    stemmer: str = "english"


BM25_OPTIONS = declare_settings("registry", BM25Settings, prefix="bm25_")


@dataclass
class BenchContext:
    """Everything methods share on one dataset: the corpus, its vectors and the base retrievers.

    ``options`` carries method options from the CLI (read through each family's
    :class:`~rag_multihop.eval.options.OptionGroup`); :meth:`memo` lets methods share
    expensive state (a trained model, a graph) within one benchmark run.
    """

    dataset: Dataset
    encoder: Encoder
    passage_vectors: np.ndarray
    query_vectors: np.ndarray
    options: dict[str, Any] = field(default_factory=dict)
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def dense(self) -> DenseRetriever:
        """Exact cosine retrieval over ``passage_vectors`` (FAISS flat inner product)."""
        index = DenseIndex.build(self.dataset.corpus.ids, self.passage_vectors)
        return DenseRetriever(self.dataset.corpus, index, self.encoder)

    @cached_property
    def bm25(self) -> BM25Retriever:
        """BM25 over the corpus; ``--option bm25_stemmer=none`` turns stemming off."""
        stemmer = BM25_OPTIONS.read(self.options).stemmer
        return BM25Retriever(self.dataset.corpus, stemmer=None if stemmer == "none" else stemmer)

    @property
    def raw_encoder(self) -> Encoder:
        """The encoder without its disk cache: texts met at query time (questions, expansion
        queries) would each write a cache shard otherwise."""
        encoder = self.encoder
        return encoder.encoder if isinstance(encoder, CachedEncoder) else encoder

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """The value stored under ``key`` in this run, built by ``build()`` on first use.

        The key names everything the value depends on (a family prefix and its settings), so
        that methods of one run share a trained model or a graph and never a stale one.
        """
        if key not in self._memo:
            self._memo[key] = build()
        return cast(T, self._memo[key])

    def queries(self) -> list[Query]:
        """One :class:`Query` per question, carrying its precomputed embedding."""
        return [
            Query(q.question, id=q.id, embedding=self.query_vectors[i])
            for i, q in enumerate(self.dataset.questions)
        ]


def embed_dataset(
    dataset: Dataset, encoder: Encoder, *, show_progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Passage vectors (``title + "\\n" + text``) and question vectors, in dataset order."""
    passages = encoder.encode(dataset.corpus.texts(), show_progress=show_progress)
    questions = encoder.encode([q.question for q in dataset.questions], show_progress=show_progress)
    return passages, questions


def build_context(
    dataset: Dataset,
    encoder: Encoder,
    *,
    options: dict[str, Any] | None = None,
    show_progress: bool = False,
) -> tuple[BenchContext, float]:
    """A :class:`BenchContext` for ``dataset`` and the seconds spent embedding."""
    start = time.perf_counter()
    passages, questions = embed_dataset(dataset, encoder, show_progress=show_progress)
    seconds = time.perf_counter() - start
    return BenchContext(dataset, encoder, passages, questions, options=dict(options or {})), seconds
