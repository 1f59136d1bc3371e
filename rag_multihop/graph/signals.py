"""The signals of the entity-graph retriever (see :mod:`rag_multihop.signals` for the rule).

>>> sorted(SIGNALS)
['graph']
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {"graph": "reached through the entity graph (Personalized PageRank mass)"}
)
"""What :class:`~rag_multihop.graph.GraphRetriever` writes: its PPR score."""
