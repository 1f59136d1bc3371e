"""Haystack writers of rag-multihop: :class:`CorpusIndexWriter` keeps a persistent corpus
index in step with an indexing pipeline."""

from __future__ import annotations

from haystack_integrations.components.writers.rag_multihop.corpus_index import CorpusIndexWriter

__all__ = ["CorpusIndexWriter"]
