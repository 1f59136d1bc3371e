"""Haystack peers: dense + BM25 fused by Haystack's own ``DocumentJoiner``.

:mod:`rag_multihop.eval.methods.peers` registers two methods that build
:class:`HaystackJoinerPeer` (importing this module, and Haystack, only then):

- ``hs-joiner-rrf``: ``join_mode="reciprocal_rank_fusion"``, score = sum over lists of
  w * 61 / (61 + rank0) with w = 1/2;
- ``hs-joiner-dbsf``: ``join_mode="distribution_based_rank_fusion"``, per-list scaling to
  mean +/- 3 std, then the maximum over lists.

The benchmark's shared dense and BM25 retrievers (``context.dense``, ``context.bm25``) each
return ``peer_child_k`` candidates (default
:data:`~rag_multihop.eval.registry.DEFAULT_PEER_CHILD_K`), converted to scored ``Document``s
(``id`` = passage id, ``content`` = text, ``meta["title"]``); ``DocumentJoiner.run`` fuses
them, unchanged, with the lists in the order ``[dense, bm25]`` (the order the LlamaIndex peers
use). The joiner is called directly rather than through a two-input ``Pipeline``: a pipeline
hands the variadic lists over in alphabetical order of the sender names, which changes how
score ties are broken, and adds tens of milliseconds per query (see ``docs/benchmarks.md``).
The child depth is independent of the ``k`` asked for, so the fused ranking for ``k=5`` is the
prefix of the one for ``k=20``; when ``k`` is larger than the fused pool fewer than ``k``
candidates come back.

Returned candidates carry the signals ``"fused"`` (the joiner score) and ``"dense"`` /
``"bm25"`` (the child score, for the children that returned the passage).

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
from typing import Any

from haystack import Document
from haystack import __version__ as haystack_version
from haystack.components.joiners import DocumentJoiner

from rag_multihop.corpus import Corpus
from rag_multihop.eval.registry import DEFAULT_PEER_CHILD_K, PEER_CHILD_K_OPTION
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int

TITLE_KEY = "title"
"""``Document.meta`` key holding the passage title."""


def passage_to_document(passage: Passage, score: float | None = None) -> Document:
    """A new ``Document`` for ``passage``; ``title`` wins over a same-named metadata key.

    The score goes to the constructor (building a ``Document`` once is cheaper than building
    it and then ``dataclasses.replace``-ing its score); no ``Document`` is ever mutated.
    """
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


class HaystackJoinerPeer:
    """Dense + BM25 fused by ``DocumentJoiner`` in one ``join_mode``; a core Retriever.

    Args:
        corpus: the corpus both children retrieve from (joined documents are looked up in it).
        dense: the dense retriever (signal ``"dense"``).
        bm25: the lexical retriever (signal ``"bm25"``).
        join_mode: a Haystack ``JoinMode`` value.
        child_k: candidates each child returns before fusion.
    """

    def __init__(
        self,
        corpus: Corpus,
        dense: Retriever,
        bm25: Retriever,
        *,
        join_mode: str,
        child_k: int = DEFAULT_PEER_CHILD_K,
    ) -> None:
        self.corpus = corpus
        self.dense = dense
        self.bm25 = bm25
        self.join_mode = join_mode
        self.child_k = check_positive_int(child_k, "child_k")
        self._joiner = DocumentJoiner(join_mode=join_mode)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best fused candidates for ``query``, in the joiner's order (rank 1 first)."""
        k = check_positive_int(k, "k")
        children = {
            "dense": self.dense.retrieve(query, k=self.child_k),
            "bm25": self.bm25.retrieve(query, k=self.child_k),
        }
        record: dict[str, dict[str, float]] = {}
        for signal, candidates in children.items():
            for candidate in candidates:
                record.setdefault(candidate.id, {})[signal] = float(candidate.score)
        lists = [[candidate_to_document(c) for c in found] for found in children.values()]
        joined = self._joiner.run(documents=lists, top_k=k)["documents"]
        return [
            document_to_candidate(
                doc,
                self.corpus,
                rank=rank,
                signals={"fused": 0.0 if doc.score is None else doc.score, **record[doc.id]},
            )
            for rank, doc in enumerate(joined, start=1)
        ]

    def bench_extras(self) -> dict[str, Any]:
        """Settings reported next to the benchmark numbers."""
        return {
            "framework": f"haystack-ai {haystack_version}",
            "join_mode": self.join_mode,
            PEER_CHILD_K_OPTION: self.child_k,
        }
