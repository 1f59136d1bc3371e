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

from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np
import Stemmer

from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.text import visible
from rag_multihop.types import Candidate, Passage, Query, rank_candidates
from rag_multihop.validation import check_number, check_positive_int, check_query


class BM25Retriever:
    """Lexical retrieval; signal ``"bm25"``.

    Args:
        corpus: the passages to index (a :class:`Corpus` or a list of passages).
        k1, b: BM25 parameters (``k1 >= 0``, ``b`` in [0, 1]).
        stemmer: a Snowball language name (PyStemmer) or ``None`` for no stemming.
    """

    def __init__(
        self,
        corpus: Corpus | Sequence[Passage],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stemmer: str | None = "english",
    ) -> None:
        self.corpus = corpus = as_corpus(corpus)
        self.k1 = check_number(k1, "k1", low=0)
        self.b = check_number(b, "b", low=0, high=1)
        self._stemmer = _stemmer(stemmer)
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
        scores = self.scores(check_query(query).text)
        top = np.argsort(-scores, kind="stable")[:k]
        return rank_candidates(
            Candidate(self.corpus[int(i)], float(scores[i]), signals={"bm25": float(scores[i])})
            for i in top
            if scores[i] > 0
        )


def _stemmer(language: str | None) -> Any:
    """PyStemmer's stemmer for ``language`` (``None`` or ``""``: no stemming), else
    ``ValueError`` listing the languages it knows."""
    if language is None or language == "":
        return None
    if isinstance(language, str):
        try:
            return Stemmer.Stemmer(language)
        except KeyError:
            pass
    raise ValueError(
        f"stemmer must be None or a Snowball language, one of {sorted(Stemmer.algorithms())}, "
        f"got {language!r}"
    )
