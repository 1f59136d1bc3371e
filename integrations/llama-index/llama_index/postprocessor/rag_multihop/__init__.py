"""LlamaIndex node postprocessors of rag-multihop.

- :class:`AssociationRerank`: association-augmented reranking (AAR) with a model trained by
  ``rag-multihop aar train`` (see ``docs/association.md``).
- :class:`BridgeJudgeRerank`: the bridge-conditioned (tripartite) judge of BridgeRAG, with an
  LLM or LLM-free (see ``docs/bridge.md``).
- :class:`RaLaRerank`: CoopRAG's RaLa, late interaction over encoder hidden states, LLM-free
  (see ``docs/coop.md``).

Example:
    >>> from llama_index.postprocessor.rag_multihop import AssociationRerank
    >>> AssociationRerank(model_path="models/aar", top_n=3).to_dict()["class_name"]
    'AssociationRerank'
"""

from __future__ import annotations

from llama_index.postprocessor.rag_multihop.association import AssociationRerank
from llama_index.postprocessor.rag_multihop.bridge_judge import BridgeJudgeRerank
from llama_index.postprocessor.rag_multihop.rala import RaLaRerank

__all__ = ["AssociationRerank", "BridgeJudgeRerank", "RaLaRerank"]
