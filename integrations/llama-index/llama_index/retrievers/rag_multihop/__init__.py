"""LlamaIndex retrievers of rag-multihop.

- :class:`PITFusionRetriever`: calibrated (PIT) fusion of any ``BaseRetriever``s, a drop-in
  for ``QueryFusionRetriever``.
- :class:`EntityGraphRetriever`: Personalized PageRank over an entity graph built from nodes.
- :class:`BridgeRetriever`: bridge-conditioned pool widening and judging around a retriever.
- :class:`CoopRetriever`: CoopRAG's unrolling-augmented retrieval, RaLa reranking and
  KeyExtract around a retriever; :class:`UnrollingQueryTransform` (question unrolling into
  ``custom_embedding_strs``) and :class:`CoopQueryEngine` (chain completion and answer).
- :class:`MultiHopRetriever`: the LLM-free multi-hop retriever (best pair for ranks 1-2, title
  links, entity-graph tail) over nodes.
- :class:`CorpusIndexWriter` (an ``IngestionPipeline`` transform that upserts nodes into a
  persistent :class:`rag_multihop.store.CorpusIndex`, with a delete path) and
  :class:`CorpusIndexMultiHopRetriever` (the multi-hop retriever reading that index,
  reopened when its version moves).
- :func:`instrument` / :func:`uninstrument`: rag-multihop's stage spans in LlamaIndex's
  instrumentation dispatcher (on from import; see :mod:`.tracing`).
- :func:`nodes_to_corpus`: the rag-multihop corpus of nodes (to train an association model or
  build an entity graph over an index's nodes); :data:`SIGNALS_KEY`, the node metadata key
  under which every component of this package writes its signals.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from llama_index.retrievers.rag_multihop._convert import SIGNALS_KEY, nodes_to_corpus
from llama_index.retrievers.rag_multihop.bridge import BridgeRetriever
from llama_index.retrievers.rag_multihop.coop import (
    CoopQueryEngine,
    CoopRetriever,
    UnrollingQueryTransform,
)
from llama_index.retrievers.rag_multihop.corpus_index import (
    CorpusIndexMultiHopRetriever,
    CorpusIndexWriter,
)
from llama_index.retrievers.rag_multihop.fusion import PITFusionRetriever
from llama_index.retrievers.rag_multihop.graph import EntityGraphRetriever
from llama_index.retrievers.rag_multihop.multihop import MultiHopRetriever
from llama_index.retrievers.rag_multihop.tracing import instrument, uninstrument

try:
    __version__ = version("llama-index-rag-multihop")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "SIGNALS_KEY",
    "BridgeRetriever",
    "CoopQueryEngine",
    "CoopRetriever",
    "CorpusIndexMultiHopRetriever",
    "CorpusIndexWriter",
    "EntityGraphRetriever",
    "MultiHopRetriever",
    "PITFusionRetriever",
    "UnrollingQueryTransform",
    "__version__",
    "instrument",
    "nodes_to_corpus",
    "uninstrument",
]
