"""rag-multihop: multi-hop retrieval methods for the RAG stacks people already run.

The top-level import stays light (numpy only): encoders, FAISS, torch, litellm and the
framework adapters load on first use.

Example:
    >>> from rag_multihop import Candidate, Passage, rank_candidates
    >>> a, b = Candidate(Passage("a", "x"), 0.2), Candidate(Passage("b", "y"), 0.9)
    >>> ranked = rank_candidates([a, b])
    >>> [c.id for c in ranked]
    ['b', 'a']
"""

from rag_multihop._version import __version__
from rag_multihop.corpus import Corpus
from rag_multihop.protocols import Reranker, Retriever, Searcher
from rag_multihop.types import Candidate, Passage, Query, rank_candidates

__all__ = [
    "Candidate",
    "Corpus",
    "Passage",
    "Query",
    "Reranker",
    "Retriever",
    "Searcher",
    "__version__",
    "rank_candidates",
]
