"""Haystack retrievers of rag-multihop: :class:`EntityGraphRetriever` (entity graph + PPR)."""

from __future__ import annotations

from haystack_integrations.components.retrievers.rag_multihop.graph_retriever import (
    EntityGraphRetriever,
)

__all__ = ["EntityGraphRetriever"]
