"""Every knob of BridgeRAG, with its default, validated once.

The retriever, the reranker, the benchmark and the framework adapters all read these
defaults; the LLM stages' own limits (prompt lengths, SVO query count) stay on
:class:`~rag_multihop.bridge.queries.LLMQueryWriter` and
:class:`~rag_multihop.bridge.judges.LLMJudge`.

Example:
    >>> BridgeSettings().alpha, BridgeSettings().pool_cap, BridgeSettings().templates
    (0.1, 20, ('question', 'residual', 'key-sentence'))
    >>> BridgeSettings(bridge_position="last")
    Traceback (most recent call last):
    ...
    ValueError: bridge_position must be one of ['first', 'judged'], got 'last'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rag_multihop.bridge.judges import JudgeWeights
from rag_multihop.bridge.pool import DEFAULT_ENTITY_K, DEFAULT_POOL_CAP, DEFAULT_QUERY_K
from rag_multihop.bridge.queries import (
    DEFAULT_TEMPLATES,
    LLM_FREE_ENTITIES,
    TemplateQueryWriter,
    check_templates,
)
from rag_multihop.validation import check_choice, check_fraction, check_int, check_positive_int

DEFAULT_ALPHA = 0.1
"""Weight of the retrieval score in the fusion (BridgeRAG: 0.1; 0.15 on HotpotQA)."""

BRIDGE_POSITIONS: Mapping[str, str] = MappingProxyType(
    {
        "first": "the bridge is rank 1, the fused pool follows (default)",
        "judged": "the bridge joins the pool and is judged and fused like any candidate",
    }
)


@dataclass(frozen=True)
class BridgeSettings:
    """Knobs of :class:`~rag_multihop.bridge.pipeline.BridgeRetriever` and
    :class:`~rag_multihop.bridge.rerank.BridgeReranker` (BridgeRAG's published run
    configuration, plus the LLM-free mode's).

    Attributes:
        alpha: weight α of the retrieval score in ``(1 − α)·PIT(judge) + α·PIT(retrieval)``.
        entity_k, query_k: hits kept per entity search and per query search.
        pool_cap: the most candidates in the pool.
        bridge_position: a key of :data:`BRIDGE_POSITIONS`.
        entities: entities the LLM-free writer searches
            (:data:`~rag_multihop.bridge.queries.LLM_FREE_ENTITIES`; 0 = none).
        templates: the LLM-free writer's query templates (names of
            :data:`~rag_multihop.bridge.queries.QUERY_TEMPLATES`).
        judge_weights: the LLM-free judges' :class:`~rag_multihop.bridge.judges.JudgeWeights`.
        keep_first_stage: when an LLM-free judge finds no name connecting any pool candidate
            to hop 1 (neither the bridge nor the question names one), return hop 1's order
            (signal ``first_stage``): the judge would only reshuffle by similarity. An LLM
            judge is never gated.

    >>> BridgeSettings(alpha=1.5)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in [0, 1], got 1.5
    """

    alpha: float = DEFAULT_ALPHA
    entity_k: int = DEFAULT_ENTITY_K
    query_k: int = DEFAULT_QUERY_K
    pool_cap: int = DEFAULT_POOL_CAP
    bridge_position: str = "first"
    entities: int = LLM_FREE_ENTITIES
    templates: tuple[str, ...] = DEFAULT_TEMPLATES
    judge_weights: JudgeWeights = field(default_factory=JudgeWeights)
    keep_first_stage: bool = True

    def __post_init__(self) -> None:
        check_fraction(self.alpha, "alpha")
        check_positive_int(self.entity_k, "entity_k")
        check_positive_int(self.query_k, "query_k")
        check_positive_int(self.pool_cap, "pool_cap")
        check_choice(self.bridge_position, "bridge_position", BRIDGE_POSITIONS)
        check_int(self.entities, "entities", low=0)
        object.__setattr__(self, "templates", check_templates(self.templates))
        if not isinstance(self.keep_first_stage, bool):
            raise ValueError(
                f"keep_first_stage must be True or False, got {self.keep_first_stage!r}"
            )
        if not isinstance(self.judge_weights, JudgeWeights):
            raise ValueError(
                f"judge_weights must be JudgeWeights, got {type(self.judge_weights).__name__}"
            )

    def template_writer(self) -> TemplateQueryWriter:
        """The LLM-free writer of these settings (``entities``, ``templates``)."""
        return TemplateQueryWriter(n_entities=self.entities, templates=self.templates)
