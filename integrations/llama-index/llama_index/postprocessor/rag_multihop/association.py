"""AAR (association-augmented reranking) as a LlamaIndex node postprocessor.

The postprocessor translates nodes into rag-multihop candidates (node id = passage id, text and
title by the package's one rule, see :mod:`llama_index.retrievers.rag_multihop._convert`), calls
:class:`rag_multihop.association.AssociationReranker` and returns **new** nodes: copies whose
score is the blended AAR score and whose ``metadata["rag_multihop_signals"]`` holds the
signals ``association``, ``cosine`` and ``retrieval_score`` (the incoming score) next to any
earlier rag-multihop signals, hidden from the LLM and the embedder. The input nodes are never
modified.

Vectors: a node the saved model stores (by node id) uses the stored vector and f(p); any
other node uses ``node.embedding`` when set, else ``embed_model`` embeds its
``title + "\n" + text`` (``node.embedding`` is usually ``None``: ``VectorStoreIndex`` strips
it). The query vector comes from ``embed_model`` when set, else ``query_bundle.embedding``
(which must come from the encoder the model was trained with).

Example:
    >>> from llama_index.postprocessor.rag_multihop import AssociationRerank
    >>> rerank = AssociationRerank(model_path="models/aar-demo", top_n=3)  # doctest: +SKIP
    >>> query_engine = index.as_query_engine(node_postprocessors=[rerank])  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import (
    NODE_KEY,
    as_encoder,
    candidate_to_node,
    node_to_candidate,
)

from rag_multihop.association import SCORING_MODES, AssociationReranker
from rag_multihop.types import Candidate, Query

RETRIEVAL_SCORE_KEY = "retrieval_score"
"""Signal holding the score a node had before reranking (LlamaIndex's name for it)."""


class AssociationRerank(BaseNodePostprocessor):
    """Rerank nodes by ``(1 − λ)·cos(q, p) + λ·a(q, p)`` with a trained association model.

    Args:
        model_path: directory of a saved model (``rag-multihop aar train`` or
            ``AssociationReranker.save``); loaded on first use.
        top_n: number of nodes returned.
        lambda_: blend weight in [0, 1]; ``None`` keeps the saved value.
        mode: ``"mixed"`` or ``"reverse"``; ``None`` keeps the saved value.
        embed_model: embeds the query and nodes the model does not store (not serialised).
    """

    model_path: str = Field(description="Directory of a saved rag-multihop association model.")
    top_n: int = Field(default=5, gt=0, description="Number of nodes to return.")
    lambda_: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Association weight; None = saved value."
    )
    mode: str | None = Field(default=None, description="Scoring mode; None = saved value.")
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)
    _reranker: AssociationReranker | None = PrivateAttr(default=None)

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, value: str | None) -> str | None:
        if value is not None and value not in SCORING_MODES:
            raise ValueError(f"mode must be one of {sorted(SCORING_MODES)}, got {value!r}")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "AssociationRerank"

    def _load(self) -> AssociationReranker:
        if self._reranker is None:
            self._reranker = AssociationReranker.load(
                self.model_path, lambda_=self.lambda_, mode=self.mode
            )
        return self._reranker

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("Missing query bundle: AssociationRerank needs the query.")
        if not nodes:
            return []
        reranker = self._load()
        query = Query(query_bundle.query_str, embedding=self._query_embedding(query_bundle))
        candidates = [
            node_to_candidate(
                n, signals={} if n.score is None else {RETRIEVAL_SCORE_KEY: float(n.score)}
            )
            for n in nodes
        ]
        with self.callback_manager.event(
            CBEventType.RERANKING,
            payload={
                EventPayload.NODES: nodes,
                EventPayload.MODEL_NAME: self.model_path,
                EventPayload.QUERY_STR: query_bundle.query_str,
                EventPayload.TOP_K: self.top_n,
            },
        ) as event:
            ranked = reranker.rerank(
                query, candidates, top_n=self.top_n, vectors=self._vectors(candidates, reranker)
            )
            new_nodes = [candidate_to_node(c) for c in ranked]
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes

    def _query_embedding(self, query_bundle: QueryBundle) -> list[float] | None:
        if self.embed_model is not None:
            return self.embed_model.get_query_embedding(query_bundle.query_str)
        return query_bundle.embedding

    def _vectors(
        self, candidates: list[Candidate], reranker: AssociationReranker
    ) -> dict[str, Any]:
        """Embeddings of unstored nodes: ``node.embedding``, else the embed model's."""
        unknown = [c for c in candidates if not reranker.stores(c.id)]
        nodes = {c.id: c.passage.metadata[NODE_KEY] for c in unknown}
        vectors: dict[str, Any] = {
            pid: node.embedding for pid, node in nodes.items() if node.embedding is not None
        }
        to_embed = [c for c in unknown if c.id not in vectors]
        if to_embed and self.embed_model is not None:
            embedded = as_encoder(self.embed_model).encode(
                [c.passage.embedding_text for c in to_embed]
            )
            vectors.update(zip((c.id for c in to_embed), embedded, strict=True))
        return vectors
