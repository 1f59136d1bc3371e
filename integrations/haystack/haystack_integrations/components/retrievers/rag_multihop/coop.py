"""``CoopRetriever``: CoopRAG's unrolling-augmented retrieval, RaLa and KeyExtract as one
Haystack retriever around any embedding retriever.

For a query: the LLM unrolls it (``llm``; without one the question is searched alone), the
unrolled question is embedded by ``embedder`` (it must be the model that embedded the store's
documents; default the bundled all-MiniLM-L6-v2) and searched with the wrapped retriever
(``candidates`` documents), RaLa reranks them (``rala=True``; ``model`` names the
sentence-transformers model whose hidden states it reads, default the bundled MiniLM), and
``keyextract_rounds > 0`` runs KeyExtract: while the top ``keyextract_top_k`` documents do not
answer the question (LLM judge; LLM-free: never), one key sentence of them is appended to the
search text and the search runs again, until the budget ends it. The loop is inside this one
component; its rounds and why they stopped are in ``trace``.

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
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.convert import (
    as_encoder,
    candidate_to_document,
    check_api_key,
    check_embedder,
    check_encoder_name,
    check_llm,
    document_to_candidate,
    embedder_to_dict,
    llm_client,
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
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int


class EmbeddingSearch:
    """An embedding retriever component as a core retriever: the text embedded, then one
    ``run(query_embedding=..., top_k=...)``."""

    def __init__(self, retriever: Any, encoder: Encoder) -> None:
        self.retriever = retriever
        self.encoder = encoder

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        check_positive_int(k, "k")
        vector = [float(v) for v in self.encoder.encode([query.text])[0]]
        documents = self.retriever.run(query_embedding=vector, top_k=k)["documents"]
        return [document_to_candidate(d) for d in documents]


@component
class CoopRetriever:
    """UAR + RaLa + KeyExtract around an embedding retriever (see the module docstring).

    Args:
        retriever: the embedding retriever component (``run(query_embedding=, top_k=)``).
        top_k: documents returned (``run(top_k=...)`` overrides it).
        llm: a litellm model string (``"local"`` for the embedded model); ``None``: LLM-free.
        api_base: an OpenAI-compatible server URL.
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
        embedder: embeds the search texts (a Haystack embedder component, a
            sentence-transformers model name, or ``None`` for the bundled MiniLM).
        rala: rerank with RaLa; ``model`` is the sentence-transformers model it reads.
        candidates, keyextract_top_k, uar_mode, keyextract_rounds: the core
            :class:`rag_multihop.coop.CoopSettings` fields ``candidates``, ``top_k``,
            ``uar_mode`` and ``keyextract_rounds``, kept as :attr:`settings`.
    """

    def __init__(
        self,
        retriever: Any,
        *,
        top_k: int = 10,
        llm: str | None = None,
        api_base: str | None = None,
        api_key: Secret | None = None,
        embedder: Any = None,
        rala: bool = True,
        model: str | None = None,
        candidates: int = CoopSettings.candidates,
        keyextract_top_k: int = CoopSettings.top_k,
        uar_mode: str = CoopSettings.uar_mode,
        keyextract_rounds: int = CoopSettings.keyextract_rounds,
    ) -> None:
        if not callable(getattr(retriever, "run", None)):
            raise TypeError(
                "retriever must be a Haystack embedding retriever component with "
                f"run(query_embedding=..., top_k=...), got {type(retriever).__name__}"
            )
        self.retriever = retriever
        self.top_k = check_positive_int(top_k, "top_k")
        self.llm = None if llm is None else check_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self.embedder = check_embedder(embedder)
        self.rala = bool(rala)
        self.model = check_encoder_name(model)
        self.settings = CoopSettings(
            candidates=candidates,
            top_k=keyextract_top_k,
            uar_mode=uar_mode,
            keyextract_rounds=keyextract_rounds,
        )
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
                EmbeddingSearch(self.retriever, encoder),
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
            llm=self.llm,
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            embedder=embedder_to_dict(self.embedder),
            rala=self.rala,
            model=self.model,
            candidates=s.candidates,
            keyextract_top_k=s.top_k,
            uar_mode=s.uar_mode,
            keyextract_rounds=s.keyextract_rounds,
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

    @component.output_types(
        documents=list[Document], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    def run(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        """The ``top_k`` best documents for ``query``, its unrolling and trace."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        return self._outputs(self._ready().run(Query(query), limit, read=False))

    @component.output_types(
        documents=list[Document], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        """The async twin of :meth:`run`: the core's ``arun`` (LLM calls awaited; searches
        and RaLa in a worker thread)."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        return self._outputs(await self._ready().arun(Query(query), limit, read=False))
