"""Haystack retrievers of rag-multihop.

- :class:`EntityGraphRetriever`: Personalized PageRank over an entity graph of a store.
- :class:`BridgeRetriever`: bridge-conditioned pool widening and judging (BridgeRAG).
- :class:`CoopRetriever`: CoopRAG's unrolling-augmented retrieval, RaLa and KeyExtract.
- :class:`MultiHopRetriever`: the LLM-free multi-hop retriever (best pair for ranks 1-2,
  title links, entity-graph tail) over a store.
- :class:`CorpusIndexMultiHopRetriever`: the same method reading a persistent corpus index
  (kept by ``CorpusIndexWriter``), reopened when its version moves.
"""

from __future__ import annotations

from haystack_integrations.components.retrievers.rag_multihop.bridge import BridgeRetriever
from haystack_integrations.components.retrievers.rag_multihop.coop import CoopRetriever
from haystack_integrations.components.retrievers.rag_multihop.corpus_index import (
    CorpusIndexMultiHopRetriever,
)
from haystack_integrations.components.retrievers.rag_multihop.graph_retriever import (
    EntityGraphRetriever,
)
from haystack_integrations.components.retrievers.rag_multihop.multihop import MultiHopRetriever

__all__ = [
    "BridgeRetriever",
    "CoopRetriever",
    "CorpusIndexMultiHopRetriever",
    "EntityGraphRetriever",
    "MultiHopRetriever",
]
