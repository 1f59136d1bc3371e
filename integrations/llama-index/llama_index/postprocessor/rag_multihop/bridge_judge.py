"""``BridgeJudgeRerank``: BridgeRAG's bridge-conditioned judge as a node postprocessor.

The top node of the incoming list (by score) is the bridge; every other node is judged given
(question, bridge, bridge entities) and the judge and incoming scores are fused with PIT
(weight ``alpha`` on the incoming scores), by the core
:class:`rag_multihop.bridge.rerank.BridgeReranker`. Without ``llm`` the LLM-free embedding +
title-mention judge runs (``embed_model``, else ``Settings.embed_model``, else the bundled
all-MiniLM-L6-v2); with ``llm`` (a litellm model string, ``LLMSettings``, an ``LLMClient`` or a
LlamaIndex ``LLM`` object) the tripartite LLM judge, one call per node, concurrently. Returned
nodes are copies with the new score and the signals under ``metadata["rag_multihop_signals"]``
(hidden from the LLM and the embedder).

Serialisation (``to_dict``) holds the model string (for an object, its model identity, such as
``llama_index/OpenAI/gpt-4o-mini``: pass the object again when loading) and the key's variable
NAME, never a key.

Example:
    >>> from llama_index.postprocessor.rag_multihop import BridgeJudgeRerank
    >>> BridgeJudgeRerank(top_n=3, llm="openai/gpt-4o-mini").to_dict()["llm"]
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_serializer, model_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.llms.rag_multihop.objects import as_llm_client, check_llm, llm_name
from llama_index.retrievers.rag_multihop._convert import candidate_to_node, node_to_candidate
from llama_index.retrievers.rag_multihop.bridge import judge_encoder

from rag_multihop.bridge import BridgeSettings
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.secrets import check_env_var_name
from rag_multihop.types import Query


class BridgeJudgeRerank(BaseNodePostprocessor):
    """Judge nodes against the top node as bridge, PIT-fused with their scores.

    Args:
        top_n: nodes returned.
        llm: a litellm model string, ``LLMSettings``, an ``LLMClient`` or a LlamaIndex
            ``LLM`` for the LLM judge; ``None`` for the LLM-free judge.
        api_base: an OpenAI-compatible server URL.
        api_key_env: the NAME of the environment variable holding the key.
        alpha: weight of the incoming scores in the fusion, in [0, 1].
        bridge_position: ``"first"`` (the top node stays first) or ``"judged"``.
            ``alpha`` and ``bridge_position`` are :class:`rag_multihop.bridge.BridgeSettings`
            fields (defaults and checks are the core's); see :attr:`settings`.
        embed_model: embeds texts for the LLM-free judge (not serialised; default
            ``Settings.embed_model``, else the bundled MiniLM).
    """

    top_n: int = Field(default=5, gt=0, description="Number of nodes to return.")
    llm: Any = Field(default=None, description="litellm model string or LLM; None = LLM-free.")
    api_base: str | None = Field(default=None, description="OpenAI-compatible server URL.")
    api_key_env: str | None = Field(default=None, description="Name of the key's env variable.")
    alpha: float = Field(default=BridgeSettings.alpha, description="Weight of incoming scores.")
    bridge_position: str = Field(
        default=BridgeSettings.bridge_position, description="'first' or 'judged'."
    )
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)
    _reranker: BridgeReranker | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # checked before pydantic, whose errors would echo a key pasted here by mistake
        check_env_var_name(data.get("api_key_env"), "api_key_env")
        check_llm(data.get("llm"))
        super().__init__(**data)

    @field_serializer("llm")
    def _llm_name(self, llm: Any) -> str | None:
        return llm_name(llm)  # a model string, or an object's model identity: never a key

    @model_validator(mode="after")
    def _check_settings(self) -> BridgeJudgeRerank:
        _ = self.settings
        return self

    @property
    def settings(self) -> BridgeSettings:
        """The core :class:`~rag_multihop.bridge.BridgeSettings` of ``alpha`` and
        ``bridge_position`` (built, so checked, by the core)."""
        return BridgeSettings(alpha=self.alpha, bridge_position=self.bridge_position)

    @classmethod
    def class_name(cls) -> str:
        return "BridgeJudgeRerank"

    def _core(self) -> BridgeReranker:
        if self._reranker is None:
            if self.llm is None:
                self._reranker = BridgeReranker.llm_free(
                    judge_encoder(self.embed_model), settings=self.settings
                )
            else:
                client = as_llm_client(self.llm, self.api_base, self.api_key_env)
                self._reranker = BridgeReranker.with_llm(client, settings=self.settings)
        return self._reranker

    def _event_payload(self, nodes: list[NodeWithScore], query_bundle: QueryBundle) -> dict:
        return {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: llm_name(self.llm) or "llm-free",
            EventPayload.QUERY_STR: query_bundle.query_str,
            EventPayload.TOP_K: self.top_n,
        }

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("Missing query bundle: BridgeJudgeRerank needs the query.")
        if not nodes:
            return []
        payload = self._event_payload(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            ranked = self._core().rerank(
                Query(query_bundle.query_str), [node_to_candidate(n) for n in nodes], self.top_n
            )
            new_nodes = [candidate_to_node(c) for c in ranked]
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("Missing query bundle: BridgeJudgeRerank needs the query.")
        if not nodes:
            return []
        payload = self._event_payload(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            ranked = await self._core().arerank(
                Query(query_bundle.query_str), [node_to_candidate(n) for n in nodes], self.top_n
            )
            new_nodes = [candidate_to_node(c) for c in ranked]
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes
