"""Every knob of the graph method, with its default, validated once.

Example:
    >>> GraphSettings().seed_top_n, GraphSettings().pool_cap
    (2, 10)
    >>> GraphSettings(damping=1.0)
    Traceback (most recent call last):
    ...
    ValueError: damping must be in [0, 1), got 1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_multihop.graph.build import EdgeWeights
from rag_multihop.graph.push import DEFAULT_EPSILON
from rag_multihop.validation import (
    check_choice,
    check_fraction,
    check_number,
    check_positive_int,
)

PPR_METHODS = ("auto", "power", "push")
"""How the walk is computed: exact power iteration, local forward push, or ``auto``
(push from :data:`~rag_multihop.graph.retriever.PUSH_MIN_NODES` nodes up, where power
iteration grows with the graph)."""


@dataclass(frozen=True)
class GraphSettings:
    """Settings of :class:`~rag_multihop.graph.retriever.GraphRetriever` and of the graph
    list when it is fused with dense retrieval.

    Attributes:
        seed_top_n: how many of the seed retriever's passages seed the walk.
        entity_share: share of the seed mass on query entities when both kinds exist
            (one kind alone takes all of it). 0.75: questions name their first hop, and
            more mass on the named entities puts the passages about them on top; chosen
            on the benchmark's tune halves over 0.5 and 1.0 (1.0 drops the dense seeds
            whenever an entity is found, which cost HotpotQA 5 points of R@5).
        use_entities: seed from query entities at all.
        weights: edge-kind weights of the walk (:class:`~rag_multihop.graph.build.EdgeWeights`).
        damping: probability of another step, in ``[0, 1)``.
        tol, max_iter: power-iteration stop rule.
        ppr: one of :data:`PPR_METHODS`.
        push_epsilon: forward-push threshold per unit of out-degree (``> 0``).
        pool_cap: how many graph candidates a fusion with dense keeps (``pit-boltzmann``'s
            graph pool; ``None`` keeps all); the retriever itself returns ``k``.
    """

    seed_top_n: int = 2
    entity_share: float = 0.75
    use_entities: bool = True
    weights: EdgeWeights = field(default_factory=EdgeWeights)
    damping: float = 0.5
    tol: float = 1e-8
    max_iter: int = 100
    ppr: str = "auto"
    push_epsilon: float = DEFAULT_EPSILON
    pool_cap: int | None = 10

    def __post_init__(self) -> None:
        check_positive_int(self.seed_top_n, "seed_top_n")
        check_fraction(self.entity_share, "entity_share")
        if not isinstance(self.use_entities, bool):
            raise ValueError(f"use_entities must be True or False, got {self.use_entities!r}")
        if not isinstance(self.weights, EdgeWeights):
            raise ValueError(f"weights must be EdgeWeights, got {type(self.weights).__name__}")
        check_number(self.damping, "damping", low=0.0, high=1.0, high_open=True)
        check_number(self.tol, "tol", low=0.0, low_open=True)
        check_positive_int(self.max_iter, "max_iter")
        check_choice(self.ppr, "ppr", PPR_METHODS)
        check_number(self.push_epsilon, "push_epsilon", low=0.0, low_open=True)
        if self.pool_cap is not None:
            check_positive_int(self.pool_cap, "pool_cap")
