"""``CoopRetriever``: CoopRAG's unrolling-augmented retrieval, RaLa and KeyExtract as one
Haystack retriever around any embedding retriever.

For a query: the LLM unrolls it (``llm``; without one the question is searched alone), the
unrolled question is embedded by ``embedder`` (it must be the model that embedded the store's
documents; default the bundled all-MiniLM-L6-v2) and searched with the wrapped retriever
(``candidates`` documents), RaLa reranks them (``rala=True``; ``model`` names the
sentence-transformers model whose hidden states it reads, default the bundled MiniLM), and
``keyextract_rounds > 0`` runs KeyExtract: while the top ``reader_top_k`` documents do not
answer the question (LLM judge; LLM-free: never), one key sentence of them is appended to the
search text and the search runs again, until the budget ends it. The loop is inside this one
component; its rounds and why they stopped are in ``trace``. ``filters`` (checked when given;
init and per run, combined by ``filter_policy`` as in Haystack's own retrievers) go to every
search of the wrapped retriever.

Outputs: ``documents`` (new objects, signals in ``meta["rag_multihop_signals"]``),
``unrolling`` (for :class:`~haystack_integrations.components.generators.rag_multihop.
ChainAnswerGenerator`) and ``trace`` (texts searched, rounds, LLM calls and tokens, seconds).
The algorithm is the core :class:`rag_multihop.coop.CoopRetriever`.

Example:
    >>> from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> coop = CoopRetriever(InMemoryEmbeddingRetriever(InMemoryDocumentStore()), top_k=5)
    >>> coop.to_dict()["init_parameters"]["keyextract_rounds"]
    0
"""

from __future__ import annotations

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
    check_encoder_name,
    check_filters,
    embedder_to_dict,
    run_filters,
)

from rag_multihop.coop import (
    CoopResult,
    CoopSettings,
    KeyExtractor,
    LLMKeyExtractor,
    LLMUnroller,
    RaLaReranker,
    SimilarityKeyExtractor,
)
from rag_multihop.coop import CoopRetriever as CoreCoopRetriever
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int


@component
class CoopRetriever:
    """UAR + RaLa + KeyExtract around an embedding retriever (see the module docstring).

    Args:
        retriever: the embedding retriever component (``run(query_embedding=, top_k=)``).
        top_k: documents returned (``run(top_k=...)`` overrides it).
        llm: a litellm model string (``"local"`` for the embedded model) or a Haystack chat
            generator (wrapped, see :mod:`haystack_integrations.common.rag_multihop.chat_model`);
            ``None``: LLM-free.
        api_base: an OpenAI-compatible server URL.
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
        embedder: embeds the search texts (a Haystack embedder component, a
            sentence-transformers model name, or ``None`` for the bundled MiniLM).
        rala: rerank with RaLa; ``model`` is the sentence-transformers model it reads.
        candidates, reader_top_k, uar_mode, keyextract_rounds: the core
            :class:`rag_multihop.coop.CoopSettings` fields ``candidates``, ``top_k`` (the
            passages KeyExtract and the reader read; ``top_k`` here is the output count),
            ``uar_mode`` and ``keyextract_rounds``, kept as :attr:`settings`.
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
        rala: bool = True,
        model: str | None = None,
        candidates: int = CoopSettings.candidates,
        reader_top_k: int = CoopSettings.top_k,
        uar_mode: str = CoopSettings.uar_mode,
        keyextract_rounds: int = CoopSettings.keyextract_rounds,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
    ) -> None:
        self.retriever = check_embedding_retriever(retriever)
        self.top_k = check_positive_int(top_k, "top_k")
        self.llm = None if llm is None else check_any_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self.embedder = check_embedder(embedder)
        self.rala = bool(rala)
        self.model = check_encoder_name(model)
        self.settings = CoopSettings(
            candidates=candidates,
            top_k=reader_top_k,
            uar_mode=uar_mode,
            keyextract_rounds=keyextract_rounds,
        )
        self.filters = check_filters(filters)
        self.filter_policy = as_filter_policy(filter_policy)
        self._core: CoreCoopRetriever | None = None

    def warm_up(self) -> None:
        """Warm up the wrapped retriever, load the encoders, set up the LLM client (once)."""
        if hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()
        self._ready()

    def _ready(self) -> CoreCoopRetriever:
        if self._core is None:
            from rag_multihop.encoders import load_encoder

            encoder = as_encoder(self.embedder)
            client = None if self.llm is None else llm_client(self.llm, self.api_base, self.api_key)
            extractor: KeyExtractor | None = None
            if self.settings.keyextract_rounds:
                extractor = (
                    SimilarityKeyExtractor(encoder) if client is None else LLMKeyExtractor(client)
                )
            self._core = CoreCoopRetriever(
                DocumentSearcher(self.retriever, encoder),
                unroller=None if client is None else LLMUnroller(client),
                reranker=RaLaReranker(load_encoder(self.model)) if self.rala else None,
                key_extractor=extractor,
                settings=self.settings,
            )
        return self._core

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return default_to_dict(
            self,
            retriever=component_to_dict(self.retriever, "retriever"),
            top_k=self.top_k,
            llm=llm_to_dict(self.llm),
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            embedder=embedder_to_dict(self.embedder),
            rala=self.rala,
            model=self.model,
            candidates=s.candidates,
            reader_top_k=s.top_k,
            uar_mode=s.uar_mode,
            keyextract_rounds=s.keyextract_rounds,
            filters=self.filters,
            filter_policy=self.filter_policy.value,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoopRetriever:
        return default_from_dict(cls, data)

    @staticmethod
    def _outputs(result: CoopResult) -> dict[str, Any]:
        return {
            "documents": [candidate_to_document(c) for c in result.candidates],
            "unrolling": result.trace.unrolling.to_dict(),
            "trace": result.trace.to_dict(),
        }

    def _filters(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        return apply_filter_policy(self.filter_policy, self.filters, check_filters(filters))

    @component.output_types(
        documents=list[Document], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``top_k`` best documents for ``query``, its unrolling and trace; ``filters``
        combine with the init filters by ``filter_policy`` for this run's searches."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        with run_filters(self._filters(filters)):
            return self._outputs(self._ready().run(Query(query), limit, read=False))

    @component.output_types(
        documents=list[Document], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    async def run_async(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The async twin of :meth:`run`: the core's ``arun`` (LLM calls awaited; searches
        and RaLa in a worker thread, with this run's filters)."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        with run_filters(self._filters(filters)):
            return self._outputs(await self._ready().arun(Query(query), limit, read=False))
