"""``BridgeRetriever``: BridgeRAG around any LlamaIndex retriever, sync and async.

The wrapped retriever does every search: hop 1 on the question (its top node is the
bridge), then one search per bridge entity and per generated query. Everything else (plan,
pool, judge, PIT fusion) is rag-multihop's core :class:`rag_multihop.bridge.BridgeRetriever`;
this file only translates.

- **Searches**: ``retriever.retrieve`` / ``aretrieve`` (concurrently in async code) with a
  fresh ``QueryBundle`` per text; each result list is cut to the depth the core asks for
  (``similarity_top_k`` for hop 1, 5 per expansion search), so give the wrapped retriever a
  ``similarity_top_k`` of at least ``max(similarity_top_k, 5)``.
- **Nodes**: node id = passage id, ``get_content(MetadataMode.NONE)`` = text,
  ``metadata["title"]`` = title (the title-mention judge signal needs it). Returned nodes are
  copies of the retrieved ones with the BridgeRAG score and every signal under
  ``metadata["rag_multihop_signals"]`` (hidden from the LLM and the embedder); the wrapped
  retriever's nodes are not mutated.
- **Modes**: without ``llm`` the LLM-free mode (template queries, heuristic entities and the
  embedding + title-mention judge, embedding with ``embed_model``, else
  ``Settings.embed_model``, else the bundled all-MiniLM-L6-v2); with
  ``llm="openai/gpt-4o-mini"`` (any litellm model string) LLM entities, SVO queries and the
  tripartite judge. The key is read from the environment
  at call time (``api_key_env`` names the variable; default the provider's own).

Example:
    >>> from llama_index.core.schema import TextNode
    >>> class Fixed(BaseRetriever):  # stands in for index.as_retriever(similarity_top_k=10)
    ...     def _retrieve(self, query_bundle):
    ...         return [NodeWithScore(node=TextNode(id_="a", text="Alpha."), score=0.9)]
    >>> bridge = BridgeRetriever(Fixed(), similarity_top_k=3)  # LLM-free, MiniLM loads lazily
    >>> bridge.core.settings.alpha, type(bridge.core.judge).__name__
    (0.1, 'EmbeddingJudge')
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import (
    as_encoder,
    candidate_to_node,
    node_to_candidate,
    settings_embed_model,
)

from rag_multihop.bridge import BridgeRetriever as CoreBridgeRetriever
from rag_multihop.bridge import BridgeSettings, PassageVectors
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

if TYPE_CHECKING:
    from rag_multihop.llm import LLMClient, LLMSettings

logger = logging.getLogger(__name__)


class NodeSearcher:
    """A LlamaIndex retriever as a core searcher: one (a)retrieve per text, cut to ``k``."""

    def __init__(self, retriever: BaseRetriever) -> None:
        self.retriever = retriever

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        return [
            [node_to_candidate(n) for n in self.retriever.retrieve(QueryBundle(q.text))[:k]]
            for q in queries
        ]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        found = await asyncio.gather(
            *(self.retriever.aretrieve(QueryBundle(q.text)) for q in queries)
        )
        return [[node_to_candidate(n) for n in nodes[:k]] for nodes in found]


def judge_encoder(embed_model: BaseEmbedding | None) -> Encoder:
    """The LLM-free judge's encoder: ``embed_model``, else ``Settings.embed_model``, else the
    bundled MiniLM."""
    embed_model = embed_model or settings_embed_model()
    if embed_model is not None:
        return as_encoder(embed_model)
    from rag_multihop.encoders import default_encoder

    return default_encoder()


class BridgeRetriever(BaseRetriever):
    """BridgeRAG over ``retriever`` (see the module docstring).

    Args:
        retriever: any LlamaIndex retriever; it runs hop 1 and every expansion search.
        similarity_top_k: nodes returned (the bridge first, then the fused pool).
        llm: a litellm model string, ``LLMSettings`` or ``LLMClient`` for the LLM mode;
            ``None`` for the LLM-free mode.
        api_base: an OpenAI-compatible server URL (with a model string ``llm``).
        api_key_env: the NAME of the environment variable holding the key (never the key).
        embed_model: embeds texts for the LLM-free judge (default: ``Settings.embed_model``,
            else the bundled MiniLM).
        alpha: weight of the retrieval score in the PIT fusion.
        bridge_position: ``"first"`` or ``"judged"``. ``alpha`` and ``bridge_position`` are
            :class:`rag_multihop.bridge.BridgeSettings` fields (defaults and checks are the
            core's), kept as ``core.settings``.
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        similarity_top_k: int = 10,
        *,
        llm: str | LLMSettings | LLMClient | None = None,
        api_base: str | None = None,
        api_key_env: str | None = None,
        embed_model: BaseEmbedding | None = None,
        alpha: float = BridgeSettings.alpha,
        bridge_position: str = BridgeSettings.bridge_position,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        settings = BridgeSettings(alpha=alpha, bridge_position=bridge_position)
        searcher = NodeSearcher(retriever)
        if llm is None:
            vectors = PassageVectors(judge_encoder(embed_model))
            self.core = CoreBridgeRetriever.llm_free(searcher, vectors=vectors, settings=settings)
        else:
            self.core = CoreBridgeRetriever.with_llm(
                searcher, llm, api_base=api_base, api_key_env=api_key_env, settings=settings
            )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.core.run(Query(query_bundle.query_str), self.similarity_top_k)
        return [candidate_to_node(c) for c in result.candidates]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.core.arun(Query(query_bundle.query_str), self.similarity_top_k)
        return [candidate_to_node(c) for c in result.candidates]
