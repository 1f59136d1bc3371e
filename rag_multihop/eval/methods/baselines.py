"""The two single-signal baselines every benchmark run includes: dense and BM25."""

from __future__ import annotations

from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.registry import register_method
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseRetriever


@register_method("dense", "cosine over encoder vectors (FAISS flat inner product)", family="peer")
def build_dense(context: BenchContext) -> DenseRetriever:
    return context.dense


@register_method(
    "bm25", "BM25 (bm25s, Lucene variant, English stopwords and stemming)", family="peer"
)
def build_bm25(context: BenchContext) -> BM25Retriever:
    return context.bm25
