"""A FAISS dense index over passage vectors, and a retriever built on it.

By default the index is exact inner product (``IndexFlatIP``) over L2-normalised vectors, i.e.
cosine similarity. Any FAISS factory string (``"HNSW32"``, ``"IVF256,Flat"``, ...) can be used
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

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._atomic import atomic_directory
from rag_multihop.corpus import Corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1


def _faiss() -> Any:
    import faiss  # deferred: importing FAISS costs ~0.3 s

    return faiss


class DenseIndex:
    """Passage ids and their vectors in a FAISS index (use :meth:`build` or :meth:`load`)."""

    def __init__(
        self, faiss_index: Any, ids: Sequence[str], *, factory: str, normalize: bool
    ) -> None:
        if faiss_index.ntotal != len(ids):
            raise ValueError(
                f"FAISS index holds {faiss_index.ntotal} vectors but {len(ids)} ids were given"
            )
        self._index = faiss_index
        self.ids = list(ids)
        self.factory = factory
        self.normalize = normalize

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        vectors: np.ndarray,
        *,
        factory: str = "Flat",
        normalize: bool = True,
    ) -> DenseIndex:
        """Index ``vectors`` (one row per id) with inner-product search.

        Raises ``ValueError`` for no vectors, ids/rows count mismatch, duplicate ids or NaN rows.
        """
        matrix = as_embedding_matrix(vectors, name="passage vectors")
        if len(ids) == 0:
            raise ValueError("cannot build a dense index from zero passages")
        if len(ids) != matrix.shape[0]:
            raise ValueError(f"got {len(ids)} ids but {matrix.shape[0]} vectors")
        if len(set(ids)) != len(ids):
            raise ValueError("passage ids must be unique")
        if normalize:
            matrix = l2_normalize(matrix)
        faiss = _faiss()
        index = faiss.index_factory(matrix.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            index.train(matrix)
        index.add(matrix)
        return cls(index, ids, factory=factory, normalize=normalize)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, list[list[str]]]:
        """Scores ``(n_queries, k')`` and ids per query, best first; ``k' = min(k, len(self))``."""
        check_positive_int(k, "k")
        matrix = as_embedding_matrix(queries, name="query vectors", dim=self.dim)
        if self.normalize:
            matrix = l2_normalize(matrix)
        scores, rows = self._index.search(matrix, min(k, len(self.ids)))
        ids = [[self.ids[r] for r in row if r >= 0] for row in rows]
        return scores, ids

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``index.faiss``, ``ids.json`` and ``config.json`` atomically into ``directory``."""
        with atomic_directory(directory) as staging:
            _faiss().write_index(self._index, str(staging / "index.faiss"))
            (staging / "ids.json").write_text(json.dumps(self.ids))
            config = {
                "format_version": FORMAT_VERSION,
                "factory": self.factory,
                "normalize": self.normalize,
                "dim": self.dim,
                "size": len(self.ids),
            }
            (staging / "config.json").write_text(json.dumps(config, indent=2))

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> DenseIndex:
        source = Path(directory)
        config_path = source / "config.json"
        if not config_path.is_file():
            raise FileNotFoundError(f"{source} is not a saved DenseIndex (no config.json)")
        config = json.loads(config_path.read_text())
        if config.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"unsupported DenseIndex format_version {config.get('format_version')!r}"
            )
        index = _faiss().read_index(str(source / "index.faiss"))
        ids = json.loads((source / "ids.json").read_text())
        return cls(index, ids, factory=config["factory"], normalize=config["normalize"])


class DenseRetriever:
    """Retrieves passages by cosine similarity of encoder vectors; signal ``"dense"``.

    Query embeddings given on the :class:`~rag_multihop.types.Query` are used as they are;
    otherwise the encoder embeds the query text.
    """

    def __init__(self, corpus: Corpus, index: DenseIndex, encoder: Encoder | None = None) -> None:
        if len(index) != len(corpus):
            raise ValueError(f"index holds {len(index)} passages but the corpus has {len(corpus)}")
        self.corpus = corpus
        self.index = index
        self.encoder = encoder

    @classmethod
    def from_corpus(
        cls, corpus: Corpus, encoder: Encoder, *, factory: str = "Flat", show_progress: bool = False
    ) -> DenseRetriever:
        """Embed every passage (``title + "\\n" + text``) and index the vectors."""
        vectors = encoder.encode(corpus.texts(), show_progress=show_progress)
        return cls(corpus, DenseIndex.build(corpus.ids, vectors, factory=factory), encoder)

    def query_vector(self, query: Query) -> np.ndarray:
        if query.embedding is not None:
            return as_embedding_matrix(query.embedding, name="query embedding", dim=self.index.dim)
        if self.encoder is None:
            raise ValueError("query has no embedding and the retriever has no encoder to embed it")
        return self.encoder.encode([query.text])

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        scores, ids = self.index.search(self.query_vector(query), k)
        return rank_candidates(
            Candidate(self.corpus[pid], float(s), signals={"dense": float(s)})
            for pid, s in zip(ids[0], scores[0], strict=True)
        )
