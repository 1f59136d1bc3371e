"""The signals of the first-stage retrievers (see :mod:`rag_multihop.signals` for the rule).

>>> sorted(SIGNALS)
['bm25', 'dense']
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "dense": "similarity to the question (embedding cosine)",
        "bm25": "keyword match with the question (BM25)",
    }
)
"""What :class:`~rag_multihop.index.DenseRetriever` and
:class:`~rag_multihop.index.BM25Retriever` write: their score, under their name."""
