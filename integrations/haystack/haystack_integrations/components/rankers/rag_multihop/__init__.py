"""Haystack rankers of rag-multihop.

- :class:`AssociationRanker`: association-augmented reranking (AAR) with a model trained by
  ``rag-multihop aar train`` (see ``docs/association.md``).
- :class:`BridgeJudgeRanker`: the bridge-conditioned (tripartite) judge of BridgeRAG, with an
  LLM or LLM-free (see ``docs/bridge.md``).
- :class:`RaLaRanker`: CoopRAG's RaLa, late interaction over encoder hidden states, LLM-free
  (see ``docs/coop.md``).

Example:
    >>> from haystack_integrations.components.rankers.rag_multihop import AssociationRanker
    >>> AssociationRanker(model_path="models/aar", top_k=3).top_k
    3
"""

from __future__ import annotations

from haystack_integrations.components.rankers.rag_multihop.association import AssociationRanker
from haystack_integrations.components.rankers.rag_multihop.bridge_judge import BridgeJudgeRanker
from haystack_integrations.components.rankers.rag_multihop.rala import RaLaRanker

__all__ = ["AssociationRanker", "BridgeJudgeRanker", "RaLaRanker"]
