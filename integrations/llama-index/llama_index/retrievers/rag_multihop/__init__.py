"""LlamaIndex retrievers of rag-multihop.

- :class:`PITFusionRetriever`: calibrated (PIT) fusion of any ``BaseRetriever``s, a drop-in
  for ``QueryFusionRetriever``.
- :class:`EntityGraphRetriever`: Personalized PageRank over an entity graph built from nodes.
- :class:`BridgeRetriever`: bridge-conditioned pool widening and judging around a retriever.

The module :mod:`.benchmark_peers` registers LlamaIndex's own ``QueryFusionRetriever`` modes
with ``rag-multihop bench`` (entry-point group ``rag_multihop.methods``); importing this
package does not import it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from llama_index.retrievers.rag_multihop.bridge import BridgeRetriever
from llama_index.retrievers.rag_multihop.fusion import PITFusionRetriever
from llama_index.retrievers.rag_multihop.graph import EntityGraphRetriever

try:
    __version__ = version("llama-index-rag-multihop")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["BridgeRetriever", "EntityGraphRetriever", "PITFusionRetriever", "__version__"]
