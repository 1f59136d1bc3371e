"""Translation between rag-multihop's types and Haystack ``Document``.

A :class:`~rag_multihop.types.Passage` becomes a ``Document`` with ``id`` = passage id,
``content`` = passage text and ``meta`` = the passage metadata plus ``title`` (when it has one).
Every function builds new documents, the score passed to the constructor (building a
``Document`` once is cheaper than building it and then ``dataclasses.replace``-ing its score);
no ``Document`` is ever mutated. Going back, a document is looked up in the corpus by its id,
so the candidate carries the original passage object.

Example:
    >>> from rag_multihop import Candidate, Corpus, Passage
    >>> p = Passage("p1", "Paris is the capital of France.", title="Paris")
    >>> doc = candidate_to_document(Candidate(p, 0.5))
    >>> doc.id, doc.content, doc.meta, doc.score
    ('p1', 'Paris is the capital of France.', {'title': 'Paris'}, 0.5)
    >>> c = document_to_candidate(doc, Corpus([p]), rank=1)
    >>> (c.passage is p, c.score, c.rank)
    (True, 0.5, 1)
"""

from __future__ import annotations

from collections.abc import Mapping

from haystack import Document

from rag_multihop.corpus import Corpus
from rag_multihop.types import Candidate, Passage

TITLE_KEY = "title"
"""``Document.meta`` key holding the passage title."""


def passage_to_document(passage: Passage, score: float | None = None) -> Document:
    """A new ``Document`` for ``passage``; ``title`` wins over a same-named metadata key."""
    meta: dict[str, object] = dict(passage.metadata)
    if passage.title:
        meta[TITLE_KEY] = passage.title
    return Document(id=passage.id, content=passage.text, meta=meta, score=score)


def candidate_to_document(candidate: Candidate) -> Document:
    """A new ``Document`` for ``candidate``: its passage, with ``score`` = the candidate score."""
    return passage_to_document(candidate.passage, score=float(candidate.score))


def document_to_candidate(
    document: Document,
    corpus: Corpus,
    *,
    rank: int = 0,
    signals: Mapping[str, float] | None = None,
) -> Candidate:
    """The :class:`Candidate` for ``document``, its passage looked up in ``corpus`` by id.

    A document without a score gets score 0.0.

    Raises:
        KeyError: the document id is not a passage id of ``corpus``.
    """
    if document.id not in corpus:
        raise KeyError(
            f"document id {document.id!r} is not a passage id of the corpus; documents given to "
            "rag-multihop must come from passage_to_document (Document.id = passage id)"
        )
    score = 0.0 if document.score is None else float(document.score)
    return Candidate(corpus[document.id], score, rank=rank, signals=dict(signals or {}))
