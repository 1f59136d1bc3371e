"""The signals of the multi-hop retriever (see :mod:`rag_multihop.signals` for the rule).

>>> SIGNALS["named"]
"1 when the question names the passage's title"
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "dense": "similarity to the question (embedding cosine)",
        "named": "1 when the question names the passage's title",
        "link": "link from a chosen passage (its title named there, or a shared entity)",
        "pair": "score of the best pair (ranks 1-2)",
        "first_hop": "1 for the pair's first hop",
        "fill": "rank in the link fill after the pair",
        "fill_cal": "link-fill rank calibrated to 0-1, as fused",
        "graph": "reached through the entity graph from the pair (PageRank mass)",
        "graph_cal": "entity-graph score calibrated to 0-1, as fused",
        "fused": "link fill and entity graph fused (the tail's ranking score)",
        "lexical": "BM25 score scaled by the query's best match (0-1), in the base score",
        "first_stage": "1 where the first stage's order was kept (unsupported pair or tail rank)",
        "second_hop": "1 for a named pair passage's linked second hop, ranked after the pair",
    }
)
"""What :class:`~rag_multihop.multihop.MultiHopRetriever` writes: ``dense``, ``named`` and
``link`` on every passage (``lexical`` too when its weight is not 0), ``pair`` and
``first_hop`` on ranks 1-2, on the tail ``fill``/``graph`` with their calibrated values and
``fused``, ``second_hop`` on the linked second hops placed right after the pair, and
``first_stage`` where the first stage's order was kept."""
