"""A FAISS dense index over passage vectors, and a retriever built on it.

By default the index is exact inner product (``IndexFlatIP``) over L2-normalised vectors, i.e.
cosine similarity. Any FAISS factory string (``"HNSW32"``, ``"IVF256,Flat"``, ...) or
``"auto"`` (flat below 50k passages, HNSW beyond: :mod:`rag_multihop.index.ann`) can be used
instead; indexes that need training are trained on the vectors given to :meth:`DenseIndex.build`.

Asking for more results than the index holds returns all of them (``k`` is clamped).

Example:
    >>> import numpy as np
    >>> index = DenseIndex.build(["a", "b"], np.eye(2, dtype="float32"))
    >>> scores, ids = index.search(np.array([[0.6, 0.8]], dtype="float32"), k=5)
    >>> ids[0], [round(float(s), 2) for s in scores[0]]
    (['b', 'a'], [0.8, 0.6])
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._artifact_config import read_config, write_config
from rag_multihop._atomic import ArtifactError, atomic_directory, read_artifact, read_json_file
from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.index.ann import DEFAULT_EF_SEARCH, check_ann, make_ann_index, resolve_ann
from rag_multihop.types import Candidate, Passage, Query, rank_candidates
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize
from rag_multihop.vectors import PassageVectors

logger = logging.getLogger(__name__)

KIND = "rag_multihop.dense_index"
FORMAT_VERSION = 1

SMALL_SEARCH = 16
"""Searches of at most this many queries (a question, a bridge plan's expansion batch) run
on one OpenMP thread. FAISS splits a batch's queries over its OpenMP threads; with a few
queries there is too little work to split, and on a machine whose cores other processes
also use, the threads wait for each other at the end of every search (measured on the
2-core project machine under load: 7 queries over 6,000 vectors took 65-72 ms p50 with
FAISS's two threads, 0.9 ms with one)."""


def _faiss() -> Any:
    import faiss  # deferred: importing FAISS costs ~0.3 s

    return faiss


@contextmanager
def faiss_threads(threads: int | None) -> Iterator[None]:
    """FAISS's OpenMP threads set to ``threads`` inside the block (``None``: unchanged).

    OpenMP keeps this setting per calling thread, so searches running in other threads at
    the same time keep theirs.
    """
    faiss = _faiss()
    previous = faiss.omp_get_max_threads()
    if threads is not None and threads != previous:
        faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        if faiss.omp_get_max_threads() != previous:
            faiss.omp_set_num_threads(previous)


class DenseIndex:
    """Passage ids and their vectors in a FAISS index (use :meth:`build` or :meth:`load`).

    ``factory`` is the FAISS factory string of the index built (``"Flat"`` when ``"auto"``
    chose exact search, or the vectors were too few to train the one asked for);
    ``requested_factory`` is the one asked for (default: ``factory``).
    """

    def __init__(
        self,
        faiss_index: Any,
        ids: Sequence[str],
        *,
        factory: str,
        normalize: bool,
        requested_factory: str | None = None,
    ) -> None:
        if faiss_index.ntotal != len(ids):
            raise ValueError(
                f"FAISS index holds {faiss_index.ntotal} vectors but {len(ids)} ids were given"
            )
        self._index = faiss_index
        self.ids = list(ids)
        self.factory = factory
        self.requested_factory = requested_factory or factory
        self.normalize = normalize

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        vectors: np.ndarray,
        *,
        factory: str = "Flat",
        normalize: bool = True,
        ef_search: int = DEFAULT_EF_SEARCH,
    ) -> DenseIndex:
        """Index ``vectors`` (one row per id) with inner-product search; ``factory`` and
        ``ef_search`` as in :func:`~rag_multihop.index.ann.make_ann_index` (:attr:`factory`
        names the index built, :attr:`requested_factory` the ``factory`` given).

        Raises ``ValueError`` for no vectors, ids/rows count mismatch, duplicate ids or NaN rows.
        """
        matrix = as_embedding_matrix(vectors, name="passage vectors", ids=ids)
        if len(ids) == 0:
            raise ValueError("cannot build a dense index from zero passages")
        if len(ids) != matrix.shape[0]:
            raise ValueError(f"got {len(ids)} ids but {matrix.shape[0]} vectors")
        if len(set(ids)) != len(ids):
            raise ValueError("passage ids must be unique")
        if normalize:
            matrix = l2_normalize(matrix)
        dim = matrix.shape[1]
        built = resolve_ann(check_ann(factory, dim=dim), len(ids), dim)
        index = make_ann_index(matrix, built, ef_search=ef_search)
        return cls(index, ids, factory=built, normalize=normalize, requested_factory=factory)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, queries: np.ndarray, k: int) -> tuple[list[np.ndarray], list[list[str]]]:
        """Scores and ids per query, best first, at most ``min(k, len(self))`` each.

        A search of at most :data:`SMALL_SEARCH` queries runs on one OpenMP thread.

        Approximate indexes (IVF, HNSW) can find fewer than ``k``: FAISS marks the missing
        slots with id -1, and they are dropped from both lists, which stay aligned.
        """
        scores, positions = self.search_positions(queries, k)
        return scores, [[self.ids[p] for p in row.tolist()] for row in positions]

    def search_positions(
        self, queries: np.ndarray, k: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """:meth:`search` with each hit's position in :attr:`ids` instead of its id (a
        caller that keeps passages in the index's order skips the ids)."""
        k = check_positive_int(k, "k")
        matrix = as_embedding_matrix(queries, name="query vectors", dim=self.dim)
        if self.normalize:
            matrix = l2_normalize(matrix)
        with faiss_threads(1 if len(matrix) <= SMALL_SEARCH else None):
            scores, rows = self._index.search(matrix, min(k, len(self.ids)))
        found = rows >= 0
        return (
            [row[keep] for row, keep in zip(scores, found, strict=True)],
            [row[keep].astype(np.int64) for row, keep in zip(rows, found, strict=True)],
        )

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``index.faiss``, ``ids.json`` and ``config.json`` atomically into ``directory``."""
        with atomic_directory(directory) as staging:
            _faiss().write_index(self._index, str(staging / "index.faiss"))
            (staging / "ids.json").write_text(json.dumps(self.ids))
            config = {
                "factory": self.factory,
                "requested_factory": self.requested_factory,
                "normalize": self.normalize,
                "dim": self.dim,
                "size": len(self.ids),
            }
            write_config(staging, KIND, FORMAT_VERSION, config)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> DenseIndex:
        """Read an index saved by :meth:`save`; a folder that is not one, or whose files are
        corrupt or disagree, raises :class:`~rag_multihop._atomic.ArtifactError` naming the
        file."""
        with read_artifact(directory) as source:
            return cls._read(source)

    @classmethod
    def _read(cls, source: Path) -> DenseIndex:
        config_path = source / "config.json"
        config = read_config(
            source, KIND, (FORMAT_VERSION,), label="DenseIndex", kindless=True
        )  # kindless: indexes saved before kinds were recorded
        factory, normalize = config.get("factory"), config.get("normalize")
        requested = config.get("requested_factory", factory)  # absent in older saves
        if not isinstance(factory, str) or not isinstance(normalize, bool):
            raise ArtifactError(
                f"{config_path}: 'factory' must be a string and 'normalize' true or false, "
                f"got {factory!r} and {normalize!r}"
            )
        if not isinstance(requested, str):
            raise ArtifactError(
                f"{config_path}: 'requested_factory' must be a string, got {requested!r}"
            )
        try:
            index = _faiss().read_index(str(source / "index.faiss"))
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else "unreadable"
            raise ArtifactError(
                f"{source / 'index.faiss'} is not a FAISS index: {reason}"
            ) from None
        ids_path = source / "ids.json"
        ids = read_json_file(ids_path, "DenseIndex id list")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ArtifactError(f"{ids_path} must hold a JSON list of passage id strings")
        if len(ids) != index.ntotal or config.get("dim") not in (None, index.d):
            raise ArtifactError(
                f"{source}: {len(ids)} ids for {index.ntotal} vectors of dimension {index.d} "
                f"(config says dim {config.get('dim')!r}); the files do not belong together"
            )
        return cls(index, ids, factory=factory, normalize=normalize, requested_factory=requested)


class DenseRetriever:
    """Retrieves passages by cosine similarity of encoder vectors; signal ``"dense"``.

    Query embeddings given on the :class:`~rag_multihop.types.Query` are used as they are;
    otherwise the encoder embeds the query text. :meth:`search` answers several queries with
    one encoder call and one FAISS search (the batched
    :class:`~rag_multihop.protocols.Searcher` protocol). ``check_ids=False`` skips checking
    that every id of the index is in the corpus (a reader of one persisted index, whose
    corpus and dense search come from the same version, skips the O(corpus) scan).
    """

    def __init__(
        self,
        corpus: Corpus | Sequence[Passage],
        index: DenseIndex,
        encoder: Encoder | None = None,
        *,
        check_ids: bool = True,
    ) -> None:
        corpus = as_corpus(corpus)
        if len(index) != len(corpus):
            raise ValueError(f"index holds {len(index)} passages but the corpus has {len(corpus)}")
        unknown = [pid for pid in index.ids if pid not in corpus] if check_ids else []
        if unknown:
            raise ValueError(
                f"the index was built over other passages: {len(unknown)} of its ids are not in "
                f"the corpus (e.g. {unknown[:3]}); build it from this corpus's ids"
            )
        self.corpus = corpus
        self.index = index
        self.encoder = encoder
        self._vectors = PassageVectors(encoder, dim=index.dim)

    @classmethod
    def from_corpus(
        cls, corpus: Corpus, encoder: Encoder, *, factory: str = "Flat", show_progress: bool = False
    ) -> DenseRetriever:
        """Embed every passage (``title + "\\n" + text``) and index the vectors."""
        vectors = encoder.encode(corpus.texts(), show_progress=show_progress)
        return cls(corpus, DenseIndex.build(corpus.ids, vectors, factory=factory), encoder)

    def with_encoder(self, encoder: Encoder | None) -> DenseRetriever:
        """The same corpus and index with another query encoder (e.g. one without a cache)."""
        return DenseRetriever(self.corpus, self.index, encoder, check_ids=False)

    def query_vector(self, query: Query) -> np.ndarray:
        """The ``(1, dim)`` vector searched for ``query`` (the index normalises it)."""
        return self._vectors.queries([query], normalize=False)

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        """The ``k`` best candidates of each query, ranked; one encoder call for the texts
        without an embedding and one FAISS search."""
        k = check_positive_int(k, "k")
        if not queries:
            return []
        scores, ids = self.index.search(self._vectors.queries(queries, normalize=False), k)
        return [
            rank_candidates(
                Candidate(self.corpus[pid], float(s), signals={"dense": float(s)})
                for pid, s in zip(row_ids, row_scores, strict=True)
            )
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        """:meth:`search` in a worker thread (encoding and FAISS release the event loop)."""
        return await asyncio.to_thread(self.search, queries, k)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.search([query], k)[0]
