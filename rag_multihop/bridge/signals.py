"""The signals of BridgeRAG (see :mod:`rag_multihop.signals` for the rule).

>>> from rag_multihop.signals import signal_meaning
>>> signal_meaning("search_e1", SIGNALS)
'score in the search for bridge entity 1'
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "bridge": "1 for the bridge: hop 1's best match for the question",
        "backfill": "1 for a hop-1 match filling the list after the judged passages",
        "first_stage": "1 when no name connected a candidate to hop 1, so hop 1's order was kept",
        "retrieval": "best search score (hop 1 or an expansion search)",
        "retrieval_cal": "search score calibrated to 0-1 within the pool",
        "judge": "the judge's score given the question and the bridge (0-1)",
        "judge_cal": "judge score calibrated to 0-1 within the pool",
        "fused": "judge and search scores fused (the pool's ranking score)",
        "pool_rank": "best rank in any expansion search",
        "search_queries": "best score in the searches for the generated queries",
        "search_e<i>": "score in the search for bridge entity <i>",
    }
)
"""What :class:`~rag_multihop.bridge.BridgeRetriever` and
:class:`~rag_multihop.bridge.BridgeReranker` write (:mod:`~rag_multihop.bridge.pool`,
:func:`~rag_multihop.bridge.pipeline.fuse_pool`, :func:`~rag_multihop.bridge.pipeline.assemble`);
the bridge and backfilled passages also keep the signals of the searcher's results."""
