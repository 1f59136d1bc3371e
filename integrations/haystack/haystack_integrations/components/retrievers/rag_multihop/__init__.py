"""Haystack retrievers of rag-multihop.

- :class:`EntityGraphRetriever`: Personalized PageRank over an entity graph of a store.
- :class:`BridgeRetriever`: bridge-conditioned pool widening and judging (BridgeRAG).
- :class:`CoopRetriever`: CoopRAG's unrolling-augmented retrieval, RaLa and KeyExtract.
"""

from __future__ import annotations

from haystack_integrations.components.retrievers.rag_multihop.bridge import BridgeRetriever
from haystack_integrations.components.retrievers.rag_multihop.coop import CoopRetriever
from haystack_integrations.components.retrievers.rag_multihop.graph_retriever import (
    EntityGraphRetriever,
)

__all__ = ["BridgeRetriever", "CoopRetriever", "EntityGraphRetriever"]
