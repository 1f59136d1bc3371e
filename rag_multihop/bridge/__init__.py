"""BridgeRAG: bridge-conditioned expansion and judging, with an LLM or without one.

Modules, one job each: :mod:`.search` (batched search behind a protocol), :mod:`.queries`
(hop-2 plans: entities and queries, LLM or templates), :mod:`.pool` (the capped pool),
:mod:`.features` (title-mention signals), :mod:`.judges` (LLM, embedding and association
judges), :mod:`.settings` (:class:`BridgeSettings`, every knob), :mod:`.pipeline`
(:class:`BridgeRetriever`), :mod:`.rerank` (:class:`BridgeReranker`, judging a list you
already have). The ``bridge*`` bench methods live in
:mod:`rag_multihop.eval.methods.bridge`.
Importing this package needs neither litellm nor pydantic; the LLM stages import them on
first use. See ``docs/bridge.md``.

Example:
    >>> from rag_multihop.bridge import BridgeSettings
    >>> BridgeSettings().alpha, BridgeSettings().pool_cap
    (0.1, 20)
"""

from rag_multihop.bridge.judges import (
    NEUTRAL_SCORE,
    AssociationJudge,
    EmbeddingJudge,
    Judge,
    Judgement,
    JudgeWeights,
    LLMJudge,
)
from rag_multihop.bridge.pipeline import BRIDGE_SCORE, BridgeResult, BridgeRetriever, BridgeTrace
from rag_multihop.bridge.pool import build_pool
from rag_multihop.bridge.queries import (
    DEFAULT_TEMPLATES,
    LLM_FREE_ENTITIES,
    QUERY_TEMPLATES,
    HopPlan,
    LLMQueryWriter,
    QueryWriter,
    TemplateQueryWriter,
)
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.bridge.search import RetrieverSearcher, Searcher, as_searcher
from rag_multihop.bridge.settings import BRIDGE_POSITIONS, DEFAULT_ALPHA, BridgeSettings
from rag_multihop.bridge.signals import SIGNALS
from rag_multihop.vectors import PassageVectors

__all__ = [
    "BRIDGE_POSITIONS",
    "BRIDGE_SCORE",
    "DEFAULT_ALPHA",
    "DEFAULT_TEMPLATES",
    "LLM_FREE_ENTITIES",
    "NEUTRAL_SCORE",
    "QUERY_TEMPLATES",
    "SIGNALS",
    "AssociationJudge",
    "BridgeReranker",
    "BridgeResult",
    "BridgeRetriever",
    "BridgeSettings",
    "BridgeTrace",
    "EmbeddingJudge",
    "HopPlan",
    "Judge",
    "JudgeWeights",
    "Judgement",
    "LLMJudge",
    "LLMQueryWriter",
    "PassageVectors",
    "QueryWriter",
    "RetrieverSearcher",
    "Searcher",
    "TemplateQueryWriter",
    "as_searcher",
    "build_pool",
]
