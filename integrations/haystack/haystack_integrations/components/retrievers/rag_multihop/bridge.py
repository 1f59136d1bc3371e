"""``BridgeRetriever``: BridgeRAG as a Haystack retriever around any embedding retriever.

The wrapped component (``InMemoryEmbeddingRetriever``, ``QdrantEmbeddingRetriever``, ...;
anything with ``run(query_embedding=..., top_k=...)`` returning ``{"documents": [...]}``)
does every search: hop 1 on the question (its top document is the bridge), then one search
per bridge entity and per generated query. The texts are embedded in one batch per step by
``embedder`` (a Haystack text or document embedder component, a sentence-transformers model
name, or by default the bundled all-MiniLM-L6-v2), which must be the model that embedded the
store's documents. ``filters`` (checked when given; init and per run, combined by
``filter_policy`` as in Haystack's own retrievers) go to every search of the wrapped
retriever. Plan, pool, judge and PIT fusion are rag-multihop's core
:class:`rag_multihop.bridge.BridgeRetriever`.

- Without ``llm``: the LLM-free mode (template queries, heuristic entities, embedding +
  title-mention judge). With ``llm`` (a litellm model string): LLM entities, SVO queries
  and the tripartite judge.
- ``api_key`` is ``Secret.from_env_var(...)`` or ``None`` (the provider's own variable);
  the key is read from the environment at call time, and ``to_dict`` stores the model
  string and the variable's name only. A token secret is refused.
- Outputs: ``documents`` (new ``Document`` objects via ``dataclasses.replace``, the
  BridgeRAG score, signals in ``meta["rag_multihop_signals"]``; inputs never mutated) and
  ``trace`` (bridge, entities, queries, pool, LLM calls/tokens/cost, seconds).
- Documents need ``meta["title"]`` for the title-mention signal.

Example:
    >>> from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> bridge = BridgeRetriever(InMemoryEmbeddingRetriever(InMemoryDocumentStore()), top_k=5)
    >>> bridge.to_dict()["init_parameters"]["llm"] is None
    True
"""

from __future__ import annotations

import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import (
    check_any_llm,
    llm_client,
    llm_to_dict,
)
from haystack_integrations.common.rag_multihop.convert import (
    DocumentSearcher,
    as_encoder,
    as_filter_policy,
    candidate_to_document,
    check_api_key,
    check_embedder,
    check_embedding_retriever,
    check_filters,
    embedder_to_dict,
    run_filters,
)

from rag_multihop.bridge import BridgeRetriever as CoreBridgeRetriever
from rag_multihop.bridge import BridgeSettings, PassageVectors
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


@component
class BridgeRetriever:
    """BridgeRAG around an embedding retriever component (see the module docstring).

    Args:
        retriever: the embedding retriever component that runs every search.
        top_k: documents returned (``run(top_k=...)`` overrides it).
        llm: a litellm model string or a Haystack chat generator
            (wrapped, see :mod:`haystack_integrations.common.rag_multihop.chat_model`) for the LLM
            mode; ``None`` for the LLM-free mode.
        api_base: an OpenAI-compatible server URL (with a model string).
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
        embedder: embeds query texts and the judge's texts: a Haystack text or document
            embedder component (the pipeline's own, so its model loads once), a
            sentence-transformers model name or path, or ``None`` for the bundled
            all-MiniLM-L6-v2; it must be the model that embedded the store's documents.
        alpha: weight of the retrieval score in the PIT fusion, in [0, 1].
        bridge_position: ``"first"`` or ``"judged"``. ``alpha`` and ``bridge_position`` are
            :class:`rag_multihop.bridge.BridgeSettings` fields (defaults and checks are the
            core's), kept as :attr:`settings`.
        filters: Haystack filters for every search.
        filter_policy: how ``run(filters=...)`` combines with ``filters``: ``REPLACE``
            (default) or ``MERGE`` (Haystack's ``FilterPolicy``, or its name).
    """

    def __init__(
        self,
        retriever: Any,
        *,
        top_k: int = 10,
        llm: Any = None,
        api_base: str | None = None,
        api_key: Secret | None = None,
        embedder: Any = None,
        alpha: float = BridgeSettings.alpha,
        bridge_position: str = BridgeSettings.bridge_position,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
    ) -> None:
        self.retriever = check_embedding_retriever(retriever)
        self.top_k = check_positive_int(top_k, "top_k")
        self.llm = None if llm is None else check_any_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self.embedder = check_embedder(embedder)
        self.filters = check_filters(filters)
        self.filter_policy = as_filter_policy(filter_policy)
        self.settings = BridgeSettings(alpha=alpha, bridge_position=bridge_position)
        self._core: CoreBridgeRetriever | None = None

    def warm_up(self) -> None:
        """Warm up the wrapped retriever, load the encoder, set up the LLM client (once)."""
        if hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()
        self._ready()

    def _ready(self) -> CoreBridgeRetriever:
        if self._core is None:
            encoder = as_encoder(self.embedder)
            searcher = DocumentSearcher(self.retriever, encoder)
            if self.llm is None:
                self._core = CoreBridgeRetriever.llm_free(
                    searcher, vectors=PassageVectors(encoder), settings=self.settings
                )
            else:
                client = llm_client(self.llm, self.api_base, self.api_key)
                self._core = CoreBridgeRetriever.with_llm(searcher, client, settings=self.settings)
        return self._core

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            retriever=component_to_dict(self.retriever, "retriever"),
            top_k=self.top_k,
            llm=llm_to_dict(self.llm),
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            embedder=embedder_to_dict(self.embedder),
            alpha=self.settings.alpha,
            bridge_position=self.settings.bridge_position,
            filters=self.filters,
            filter_policy=self.filter_policy.value,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BridgeRetriever:
        return default_from_dict(cls, data)

    def _filters(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        return apply_filter_policy(self.filter_policy, self.filters, check_filters(filters))

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``top_k`` best documents for ``query`` and the query's trace; ``filters``
        combine with the init filters by ``filter_policy`` for this run's searches."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        with run_filters(self._filters(filters)):
            result = self._ready().run(Query(query), limit)
        return {
            "documents": [candidate_to_document(c) for c in result.candidates],
            "trace": result.trace.to_dict(),
        }

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    async def run_async(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The async twin of :meth:`run` (LLM calls and searches concurrent)."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        with run_filters(self._filters(filters)):
            result = await self._ready().arun(Query(query), limit)
        return {
            "documents": [candidate_to_document(c) for c in result.candidates],
            "trace": result.trace.to_dict(),
        }
