"""BM25 over a corpus with bm25s (Lucene variant, English stopwords, optional Snowball stemming).

Passages are indexed as ``title + "\\n" + text``. Passages that share no term with the query
score 0 and are not returned, so a BM25 list can be shorter than ``k``.

Example:
    >>> from rag_multihop.types import Passage
    >>> corpus = Corpus([Passage("a", "ropes and knots"), Passage("b", "rivers and lakes")])
    >>> [c.id for c in BM25Retriever(corpus).retrieve(Query("knots"), k=2)]
    ['a']
"""

from __future__ import annotations

from typing import Any

import bm25s
import numpy as np
import Stemmer

from rag_multihop.corpus import Corpus
from rag_multihop.text import visible
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_positive_int


class BM25Retriever:
    """Lexical retrieval; signal ``"bm25"``.

    Args:
        corpus: the passages to index.
        k1, b: BM25 parameters.
        stemmer: a Snowball language name (PyStemmer) or ``None`` for no stemming.
    """

    def __init__(
        self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75, stemmer: str | None = "english"
    ) -> None:
        self.corpus = corpus
        self.k1, self.b = k1, b
        self._stemmer = Stemmer.Stemmer(stemmer) if stemmer else None
        self._bm25: Any = bm25s.BM25(k1=k1, b=b, method="lucene")
        tokens = self._tokenize(corpus.texts())
        if not any(tokens):
            raise ValueError(
                f"BM25 needs at least one passage with a word that is not a stopword; all "
                f"{len(corpus)} passages are empty, punctuation or stopwords only"
            )
        self._bm25.index(tokens, show_progress=False)

    def _tokenize(self, texts: list[str]) -> Any:
        return bm25s.tokenize(
            [visible(text) for text in texts],
            stopwords="en",
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every passage for ``text``, in corpus order; all zero when ``text``
        has no indexable word (stopwords or punctuation only)."""
        tokens = self._tokenize([text])[0]
        if not tokens:
            return np.zeros(len(self.corpus), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best passages with a positive score: an empty list when the query has
        no indexable word (stopwords or punctuation only) or matches nothing."""
        k = check_positive_int(k, "k")
        scores = self.scores(query.text)
        top = np.argsort(-scores, kind="stable")[:k]
        return rank_candidates(
            Candidate(self.corpus[int(i)], float(scores[i]), signals={"bm25": float(scores[i])})
            for i in top
            if scores[i] > 0
        )
