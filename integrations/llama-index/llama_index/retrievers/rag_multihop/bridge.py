"""``BridgeRetriever``: BridgeRAG around any LlamaIndex retriever, sync and async.

The wrapped retriever does every search: hop 1 on the question (its top node is the
bridge), then one search per bridge entity and per generated query. Everything else (plan,
pool, judge, PIT fusion) is rag-multihop's core :class:`rag_multihop.bridge.BridgeRetriever`;
this file only translates.

- **Searches**: ``retriever.retrieve`` / ``aretrieve`` (concurrently in async code) with a
  fresh ``QueryBundle`` per text; each result list is cut to the depth the core asks for
  (``similarity_top_k`` for hop 1, 5 per expansion search), so give the wrapped retriever a
  ``similarity_top_k`` of at least ``max(similarity_top_k, 5)``. When the wrapped retriever
  embeds queries itself (a ``VectorIndexRetriever``, e.g. ``index.as_retriever()``), the texts
  of each search step are embedded in **one batched call** of its embed model
  (``get_text_embedding_batch``, when that model embeds queries and texts alike; otherwise one
  ``get_query_embedding`` per text) and each search runs on its vector.
- **Nodes**: node id = passage id, ``get_content(MetadataMode.NONE)`` = text,
  ``metadata["title"]`` = title (the title-mention judge signal needs it). Returned nodes are
  copies of the retrieved ones with the BridgeRAG score and every signal under
  ``metadata["rag_multihop_signals"]`` (hidden from the LLM and the embedder); the wrapped
  retriever's nodes are not mutated.
- **Modes**: without ``llm`` the LLM-free mode (template queries, heuristic entities and the
  embedding + title-mention judge, embedding with ``embed_model``, else
  ``Settings.embed_model``, else the bundled all-MiniLM-L6-v2); with
  ``llm="openai/gpt-4o-mini"`` (any litellm model string, ``LLMSettings``, an ``LLMClient``,
  or a LlamaIndex ``LLM`` object, wrapped as in :mod:`llama_index.llms.rag_multihop.objects`)
  LLM entities, SVO queries and the tripartite judge. A model string's key is read from the
  environment at call time (``api_key_env`` names the variable; default the provider's own).

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

import logging

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.llms.rag_multihop.objects import LLMLike, as_llm_client
from llama_index.retrievers.rag_multihop._convert import (
    NodeSearcher,
    ThreadTrace,
    as_encoder,
    candidate_to_node,
    settings_embed_model,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.bridge import BridgeRetriever as CoreBridgeRetriever
from rag_multihop.bridge import BridgeSettings, PassageVectors
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


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
        llm: a litellm model string, ``LLMSettings``, an ``LLMClient`` or a LlamaIndex
            ``LLM`` for the LLM mode; ``None`` for the LLM-free mode.
        api_base: an OpenAI-compatible server URL (with a model string ``llm``).
        api_key_env: the NAME of the environment variable holding the key (never the key).
        embed_model: embeds texts for the LLM-free judge (default: ``Settings.embed_model``,
            else the bundled MiniLM).
        settings: a :class:`rag_multihop.bridge.BridgeSettings` (default: its defaults).
        alpha: weight of the retrieval score in the PIT fusion.
        bridge_position: ``"first"`` or ``"judged"``. ``alpha`` and ``bridge_position``
            override the same-named field of ``settings`` (``None`` keeps it; checks are the
            core's); the result is kept as :attr:`settings`.

    ``last_trace`` is the core :class:`~rag_multihop.bridge.BridgeTrace` of the last query run
    in the calling thread (bridge, entities, queries, pool, LLM account).
    """

    last_trace = ThreadTrace()

    def __init__(
        self,
        retriever: BaseRetriever,
        similarity_top_k: int = 10,
        *,
        llm: LLMLike | None = None,
        api_base: str | None = None,
        api_key_env: str | None = None,
        embed_model: BaseEmbedding | None = None,
        settings: BridgeSettings | None = None,
        alpha: float | None = None,
        bridge_position: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        settings = resolve_settings(
            BridgeSettings, settings, alpha=alpha, bridge_position=bridge_position
        )
        searcher = NodeSearcher.of(retriever)
        if llm is None:
            vectors = PassageVectors(judge_encoder(embed_model))
            self.core = CoreBridgeRetriever.llm_free(searcher, vectors=vectors, settings=settings)
        else:
            client = as_llm_client(llm, api_base, api_key_env)
            self.core = CoreBridgeRetriever.with_llm(searcher, client, settings=settings)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def settings(self) -> BridgeSettings:
        """The core's :class:`~rag_multihop.bridge.BridgeSettings`."""
        return self.core.settings

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.core.run(Query(query_bundle.query_str), self.similarity_top_k)
        self.last_trace = result.trace
        return [candidate_to_node(c) for c in result.candidates]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.core.arun(Query(query_bundle.query_str), self.similarity_top_k)
        self.last_trace = result.trace
        return [candidate_to_node(c) for c in result.candidates]
