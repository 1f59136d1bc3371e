"""Dense candidates from the user's own store, checked against the corpus and scored here.

:class:`StoreFirstStage` wraps any core :class:`~rag_multihop.protocols.Retriever` (an
adapter's view of a FAISS/Chroma/Qdrant/... store, a framework retriever) so that it can
stand where the embedded FAISS search stands: it asks the store for ``k`` candidates, skips
the ids the corpus lacks (a store ahead of or behind the index: counted in :attr:`stale`,
never an error), and scores the rest by cosine with the corpus's own passage vectors, so a
store that returns the embedded search's candidates gives the embedded search's ranking,
whatever score or distance the store itself reports.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Candidate, Corpus, Passage, Query
    >>> corpus = Corpus([Passage("a", "x"), Passage("b", "y")])
    >>> class Store:  # stands in for a vector store returning distances and a stale id
    ...     def retrieve(self, query, k=10):
    ...         found = (("b", 0.2), ("gone", 0.3), ("a", 0.9))
    ...         return [Candidate(Passage(i, ""), d) for i, d in found]
    >>> first = StoreFirstStage(Store(), corpus, np.array([[1.0, 0.0], [0.6, 0.8]]))
    >>> found = first.retrieve(Query("q", embedding=np.array([1.0, 0.0])), k=3)
    >>> [(c.id, round(c.score, 2)) for c in found], first.stale
    ([('a', 1.0), ('b', 0.6)], 1)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Passage, Query, rank_candidates
from rag_multihop.validation import as_embedding_matrix, check_positive_int, l2_normalize
from rag_multihop.vectors import PassageVectors

logger = logging.getLogger(__name__)


class StoreFirstStage:
    """A store's candidates, known ids only, scored by cosine here (see the module docstring).

    Args:
        store: any retriever with ``retrieve(query, k) -> candidates`` (only ids are read).
        corpus: the passages the methods know.
        vectors: their vectors, in corpus order: an ``(n, d)`` array or memory map, read
            only at the rows a query's candidates name (normalised then; no copy of the
            whole matrix is made, so a million-passage index costs nothing here).
        encoder: embeds queries that carry no embedding.
    """

    def __init__(
        self,
        store: Retriever,
        corpus: Corpus | Sequence[Passage],
        vectors: np.ndarray,
        encoder: Encoder | None = None,
    ) -> None:
        if not callable(getattr(store, "retrieve", None)):
            raise TypeError(
                f"store must be a retriever with retrieve(query, k), got {type(store).__name__}"
            )
        corpus = as_corpus(corpus)
        # an array, a memory map or a row-indexable stand-in (an index's live vectors) is
        # used as it is; anything else (lists) becomes an array
        matrix = vectors if getattr(vectors, "ndim", None) == 2 else as_embedding_matrix(vectors)
        if matrix.ndim != 2:
            raise ValueError(f"passage vectors must be a 2-D (n, dim) array, got {matrix.shape}")
        if len(matrix) != len(corpus):
            raise ValueError(f"got {len(matrix)} vectors for {len(corpus)} passages")
        self.store = store
        self.corpus = corpus
        self.vectors = matrix
        self._queries = PassageVectors(encoder, dim=int(matrix.shape[1]))
        self.stale = 0
        """Ids the store returned that the corpus lacks, over all queries so far."""

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The store's ``k`` candidates that the corpus holds, best cosine first; signal
        ``"dense"``."""
        k = check_positive_int(k, "k")
        found = self.store.retrieve(query, k=k)
        rows = [self._row(c.id) for c in found]
        stale = sum(r is None for r in rows)
        if stale:
            self.stale += stale
            logger.debug("skipped %d store candidates that are not in the corpus", stale)
        known = list(dict.fromkeys(r for r in rows if r is not None))[:k]
        if not known:
            return []
        passages = [self.corpus[r] for r in known]
        ids = [p.id for p in passages]
        found_vectors = np.asarray(self.vectors[known])
        unit = l2_normalize(as_embedding_matrix(found_vectors, name="passage vectors", ids=ids))
        cos = unit @ self._queries.query(query)
        return rank_candidates(
            Candidate(p, float(s), signals={"dense": float(s)})
            for p, s in zip(passages, cos, strict=True)
        )

    def _row(self, passage_id: str) -> int | None:
        """The corpus row of ``passage_id`` (``None`` when the corpus lacks it)."""
        try:
            return self.corpus.index_of(passage_id)
        except KeyError:
            return None
