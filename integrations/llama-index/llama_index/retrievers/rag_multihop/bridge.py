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

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store.retrievers.retriever import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import (
    ThreadTrace,
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


QUERY_TEXT_TOLERANCE = 1e-5
"""Largest ``1 − cosine`` between an embed model's query and text embedding of one string
for which its queries are embedded as texts, in batches."""


class NodeSearcher:
    """A LlamaIndex retriever as a core searcher: one (a)retrieve per text, cut to ``k``.

    With ``embed_model`` (the model the retriever embeds queries with), the texts of one
    search are embedded together first and each retrieve gets its ``QueryBundle.embedding``:
    one ``get_text_embedding_batch`` call when the model embeds a query as it embeds a text
    (checked once, on the first text), else one ``get_query_embedding`` per text.
    """

    def __init__(self, retriever: BaseRetriever, embed_model: BaseEmbedding | None = None) -> None:
        self.retriever = retriever
        self.embed_model = embed_model
        self._batches: bool | None = None

    @classmethod
    def of(cls, retriever: BaseRetriever) -> NodeSearcher:
        """The searcher of ``retriever``, batching with its embed model when it has one."""
        if isinstance(retriever, VectorIndexRetriever):
            return cls(retriever, retriever._embed_model)
        return cls(retriever)

    def _batches_queries(self, embed_model: BaseEmbedding, text: str) -> bool:
        if self._batches is None:
            query = np.asarray(embed_model.get_query_embedding(text), dtype=np.float64)
            as_text = np.asarray(embed_model.get_text_embedding(text), dtype=np.float64)
            norms = float(np.linalg.norm(query) * np.linalg.norm(as_text))
            cosine = float(query @ as_text) / norms if norms else 0.0
            self._batches = cosine >= 1.0 - QUERY_TEXT_TOLERANCE
        return self._batches

    def _bundles(self, queries: Sequence[Query]) -> list[QueryBundle]:
        texts = [q.text for q in queries]
        model = self.embed_model
        if model is None or not texts:
            return [QueryBundle(text) for text in texts]
        if self._batches_queries(model, texts[0]):
            vectors = model.get_text_embedding_batch(texts)
        else:
            vectors = [model.get_query_embedding(text) for text in texts]
        return [QueryBundle(t, embedding=v) for t, v in zip(texts, vectors, strict=True)]

    async def _abundles(self, queries: Sequence[Query]) -> list[QueryBundle]:
        texts = [q.text for q in queries]
        model = self.embed_model
        if model is None or not texts:
            return [QueryBundle(text) for text in texts]
        if await asyncio.to_thread(self._batches_queries, model, texts[0]):
            vectors = await model.aget_text_embedding_batch(texts)
        else:
            vectors = await asyncio.gather(*(model.aget_query_embedding(t) for t in texts))
        return [QueryBundle(t, embedding=v) for t, v in zip(texts, vectors, strict=True)]

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        return [
            [node_to_candidate(n) for n in self.retriever.retrieve(bundle)[:k]]
            for bundle in self._bundles(queries)
        ]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        bundles = await self._abundles(queries)
        found = await asyncio.gather(*(self.retriever.aretrieve(b) for b in bundles))
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

    ``last_trace`` is the core :class:`~rag_multihop.bridge.BridgeTrace` of the last query run
    in the calling thread (bridge, entities, queries, pool, LLM account).
    """

    last_trace = ThreadTrace()

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
        searcher = NodeSearcher.of(retriever)
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
        self.last_trace = result.trace
        return [candidate_to_node(c) for c in result.candidates]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.core.arun(Query(query_bundle.query_str), self.similarity_top_k)
        self.last_trace = result.trace
        return [candidate_to_node(c) for c in result.candidates]
