"""Search structures over a corpus: a FAISS dense index and a bm25s lexical index."""

from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.index.signals import SIGNALS

__all__ = ["SIGNALS", "BM25Retriever", "DenseIndex", "DenseRetriever"]
