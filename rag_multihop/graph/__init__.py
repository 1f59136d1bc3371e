"""Entity graph over a corpus and Personalized PageRank retrieval (HippoRAG-style, label-free).

- :mod:`.extract`: the :class:`EntityExtractor` protocol and the :class:`HeuristicExtractor`;
  :mod:`.llm_extract`: ``LLMEntityExtractor`` (the ``llm`` extra; not imported here);
- :mod:`.build`: :class:`EntityGraph` (passages, entities, mention / title-link / synonym
  edges), :func:`build_entity_graph`, save and load;
- :mod:`.ppr`: Personalized PageRank by sparse power iteration (pure functions);
- :mod:`.settings`: :class:`GraphSettings`, every knob of the method with its default;
- :mod:`.retriever`: :class:`GraphRetriever`, seeded by query entities and/or a dense top-n.

PPR time and memory on synthetic graphs: ``python -m rag_multihop.eval.graph_scale``.

Example:
    >>> from rag_multihop import Corpus, Passage, Query
    >>> corpus = Corpus([
    ...     Passage("a", "Rope is a film by Alfred Hitchcock.", "Rope"),
    ...     Passage("b", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
    ... ])
    >>> retriever = GraphRetriever(build_entity_graph(corpus), corpus)
    >>> [c.id for c in retriever.retrieve(Query("Who directed Rope?"), k=2)]
    ['a', 'b']
"""

from rag_multihop.graph.build import EdgeWeights, EntityGraph, build_entity_graph
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.graph.ppr import PPRResult, personalized_pagerank, transition_matrix
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import PPR_METHODS, GraphSettings
from rag_multihop.graph.signals import SIGNALS
from rag_multihop.text import normalize_entity

__all__ = [
    "PPR_METHODS",
    "SIGNALS",
    "EdgeWeights",
    "EntityExtractor",
    "EntityGraph",
    "GraphRetriever",
    "GraphSettings",
    "HeuristicExtractor",
    "PPRResult",
    "build_entity_graph",
    "normalize_entity",
    "personalized_pagerank",
    "transition_matrix",
]
