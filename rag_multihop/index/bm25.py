"""BM25 over a corpus with bm25s (Lucene variant, English stopwords, optional Snowball stemming).

Passages are indexed as ``title + "\\n" + text``. Passages that share no term with the query
score 0 and are not returned, so a BM25 list can be shorter than ``k``.

Words are bm25s's (runs of two or more word characters). Chinese and Japanese, written without
spaces between words, are read as Lucene's CJKAnalyzer reads them: every run of CJK characters
(ideographs, hiragana, katakana, Hangul syllables) becomes its overlapping character bigrams, a
run of one character that character, so that *东京塔* finds *东京塔是位于日本东京的电波塔* (as in
Lucene, a one-character query finds that character only where it stands alone). Korean,
though written with spaces, is read the same way, as Lucene does: its particles cling to the
word (*서울은*, *서울에서*), and the bigram *서울* finds both. A text without CJK characters is
tokenised exactly as bm25s does.

Example:
    >>> from rag_multihop.types import Passage
    >>> corpus = Corpus([Passage("a", "ropes and knots"), Passage("b", "rivers and lakes")])
    >>> [c.id for c in BM25Retriever(corpus).retrieve(Query("knots"), k=2)]
    ['a']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np
import Stemmer

from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.text import visible
from rag_multihop.types import Candidate, Passage, Query, rank_candidates
from rag_multihop.validation import check_number, check_positive_int, check_query

# CJK characters: the ideographic iteration, closing and zero marks 々〆〇, hiragana and
# katakana (with its phonetic extensions and half-width forms) less their punctuation and
# combining marks (゛゜゠・), CJK Unified Ideographs (extension A, the basic block, extensions B
# to H), compatibility ideographs, Hangul syllables.
_CJK_CHAR = (
    "[\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff66-\uff9f\U00020000-\U000323af]"
)
# a run of CJK characters, each with its combining voiced mark if decomposed (か\u3099 is が)
_CJK_RUN = re.compile(f"(?:{_CJK_CHAR}[\u3099\u309a]?)+")
# bm25s's default words, or one CJK character (a run of one, after _cjk_bigrams)
_TOKEN = rf"\b\w\w+\b|{_CJK_CHAR}"


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
            [_cjk_bigrams(visible(text)) for text in texts],
            token_pattern=_TOKEN,
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


def _cjk_bigrams(text: str) -> str:
    """``text`` with every run of CJK characters written as its overlapping bigrams (a run of
    one character: that character), set apart by spaces; the run NFKC-folded first, so that
    half-width katakana read as full width. A text without CJK characters is returned as is.

    >>> _cjk_bigrams("Tokyo Tower (东京塔), 1958")
    'Tokyo Tower ( 东京 京塔 ), 1958'
    >>> _cjk_bigrams("서울은 한국의 수도 ｶﾞｽ 塔")
    ' 서울 울은   한국 국의   수도   ガス   塔 '
    """
    return _CJK_RUN.sub(_bigrams, text)


def _bigrams(run: re.Match[str]) -> str:
    chars = unicodedata.normalize("NFKC", run.group())
    return f" {' '.join(chars[i : i + 2] for i in range(max(len(chars) - 1, 1)))} "
