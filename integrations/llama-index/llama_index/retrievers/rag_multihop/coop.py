"""CoopRAG for LlamaIndex: question unrolling as a query transform, UAR + RaLa (+ KeyExtract)
as a retriever, and chain completion + answer as a query engine.

The algorithm is rag-multihop's core (:mod:`rag_multihop.coop`); this file translates.

- :class:`UnrollingQueryTransform`: the LLM unrolls the question into sub-questions and a
  masked reasoning chain; the returned ``QueryBundle`` keeps the question as ``query_str`` and
  puts the unrolled question (question + sub-questions + chain, masks left out) in
  ``custom_embedding_strs``, LlamaIndex's own hook for augmented retrieval: vector retrievers
  embed it, keyword retrievers and response synthesis still see the question. Use it with
  ``TransformQueryEngine`` or ``transform(query)`` before any retriever.
- :class:`CoopRetriever`: around any ``BaseRetriever``: unroll (with ``llm``; LLM-free the
  question alone), search the unrolled question (as the query text; a vector retriever's
  texts are embedded in one batch by its embed model, through the package's ``NodeSearcher``),
  rerank with RaLa (``rala=True``), and optionally run KeyExtract rounds (LLM judge and key
  sentence with ``llm``; LLM-free the most similar sentence); ``last_trace`` keeps the core
  :class:`~rag_multihop.coop.CoopTrace` of the last query run in the calling thread (calls,
  tokens, flags).
- :class:`CoopQueryEngine`: a ``CustomQueryEngine`` over a :class:`CoopRetriever` with an
  LLM: the chain is completed from the top nodes and a concise answer generated (yes/no for
  binary questions); the ``Response`` carries the answer, the source nodes and, in
  ``metadata``, the completed chain, spans not found in the nodes and the trace.

The LLM is a litellm model string (``"local"`` for the embedded model); the key is read from
the environment at call time (``api_key_env`` names the variable). Serialisation holds the
model string and the variable's name, never a key.

Example:
    >>> transform = UnrollingQueryTransform(llm="openai/gpt-4o-mini")
    >>> transform.llm
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.query.query_transform.base import BaseQueryTransform
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.llms.rag_multihop.objects import LLMLike, as_llm_client
from llama_index.retrievers.rag_multihop._convert import (
    NodeSearcher,
    ThreadTrace,
    candidate_to_node,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.coop import (
    ChainReader,
    CoopResult,
    CoopSettings,
    KeyExtractor,
    LLMKeyExtractor,
    LLMUnroller,
    RaLaReranker,
    RaLaSettings,
    SimilarityKeyExtractor,
    Unrolling,
)
from rag_multihop.coop import CoopRetriever as CoreCoopRetriever
from rag_multihop.llm import LLMClient
from rag_multihop.secrets import check_env_var_name, check_model_name
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int


def make_client(llm: object, api_base: str | None, api_key_env: str | None) -> LLMClient | None:
    """The core LLM client of an adapter's ``llm`` (``None``: LLM-free; else as
    :func:`~llama_index.llms.rag_multihop.as_llm_client` takes it)."""
    check_env_var_name(api_key_env, "api_key_env")
    return None if llm is None else as_llm_client(llm, api_base, api_key_env)


class UnrollingQueryTransform(BaseQueryTransform):
    """Unrolls the question with an LLM into ``custom_embedding_strs`` (module docstring).

    Args:
        llm: a litellm model string (``"local"`` for the embedded model), ``LLMSettings``,
            an ``LLMClient`` or a LlamaIndex ``LLM``.
        api_base: an OpenAI-compatible server URL (with a model string).
        api_key_env: the NAME of the environment variable holding the key.
    """

    def __init__(
        self,
        llm: LLMLike,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
    ) -> None:
        check_env_var_name(api_key_env, "api_key_env")
        client = as_llm_client(llm, api_base, api_key_env)
        self.llm = llm if isinstance(llm, str) else client.settings.model
        self.unroller = LLMUnroller(client)
        self.last_unrolling: Unrolling | None = None

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        return None

    def _run(self, query_bundle: QueryBundle, metadata: dict[str, Any]) -> QueryBundle:
        unrolling, _ = self.unroller.unroll(query_bundle.query_str)
        self.last_unrolling = unrolling
        return QueryBundle(
            query_str=query_bundle.query_str,
            custom_embedding_strs=[unrolling.query_text()],
            image_path=query_bundle.image_path,
            embedding=None,
        )


class CoopRetriever(BaseRetriever):
    """UAR + RaLa (+ KeyExtract) around any LlamaIndex retriever (module docstring).

    Args:
        retriever: the wrapped retriever; give it a ``similarity_top_k`` of at least
            ``candidates`` (the depth RaLa reranks).
        llm: a litellm model string, ``LLMSettings``, an ``LLMClient`` or a LlamaIndex
            ``LLM`` for unrolling (and KeyExtract and the query engine's reading); ``None``:
            LLM-free (the question alone).
        similarity_top_k: nodes returned.
        rala: rerank with RaLa; ``model`` names the sentence-transformers model whose hidden
            states it reads (``None``: the bundled all-MiniLM-L6-v2); ``rala_settings`` are
            the core's :class:`~rag_multihop.coop.RaLaSettings`.
        settings: a :class:`~rag_multihop.coop.CoopSettings` (default: its defaults).
        candidates, reader_top_k, uar_mode, keyextract_rounds: override the
            :class:`~rag_multihop.coop.CoopSettings` fields ``candidates``, ``top_k`` (the
            passages KeyExtract and the reader read), ``uar_mode`` and ``keyextract_rounds``
            (``None`` keeps the field; checks are the core's); kept as :attr:`settings`.
    """

    last_trace = ThreadTrace()

    def __init__(
        self,
        retriever: BaseRetriever,
        *,
        llm: LLMLike | None = None,
        api_base: str | None = None,
        api_key_env: str | None = None,
        similarity_top_k: int = 10,
        rala: bool = True,
        model: str | None = None,
        rala_settings: RaLaSettings | None = None,
        settings: CoopSettings | None = None,
        candidates: int | None = None,
        reader_top_k: int | None = None,
        uar_mode: str | None = None,
        keyextract_rounds: int | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        settings = resolve_settings(
            CoopSettings,
            settings,
            candidates=candidates,
            top_k=reader_top_k,
            uar_mode=uar_mode,
            keyextract_rounds=keyextract_rounds,
        )
        self.client = make_client(llm, api_base, api_key_env)
        if model is not None:
            check_model_name(model, "model", kind="sentence-transformers model")
        self.model = model
        reranker = None
        if rala:
            from rag_multihop.encoders import load_encoder

            reranker = RaLaReranker(load_encoder(model), settings=rala_settings)
        extractor: KeyExtractor | None = None
        if settings.keyextract_rounds:
            if self.client is not None:
                extractor = LLMKeyExtractor(self.client)
            else:
                from rag_multihop.encoders import load_encoder

                extractor = SimilarityKeyExtractor(load_encoder(model))
        self.core = CoreCoopRetriever(
            NodeSearcher.of(retriever),
            unroller=None if self.client is None else LLMUnroller(self.client),
            reranker=reranker,
            reader=None if self.client is None else ChainReader(self.client, top_k=settings.top_k),
            key_extractor=extractor,
            settings=settings,
        )
        super().__init__(callback_manager=callback_manager)

    @property
    def settings(self) -> CoopSettings:
        """The core's :class:`~rag_multihop.coop.CoopSettings`."""
        return self.core.settings

    def run(self, query: str, *, read: bool) -> CoopResult:
        """The core result for ``query`` (``read``: complete the chain and answer)."""
        result = self.core.run(Query(query), self.similarity_top_k, read=read)
        self.last_trace = result.trace
        return result

    async def arun(self, query: str, *, read: bool) -> CoopResult:
        """The async twin of :meth:`run`."""
        result = await self.core.arun(Query(query), self.similarity_top_k, read=read)
        self.last_trace = result.trace
        return result

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.run(query_bundle.query_str, read=False)
        return [candidate_to_node(c) for c in result.candidates]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.arun(query_bundle.query_str, read=False)
        return [candidate_to_node(c) for c in result.candidates]


def to_response(result: CoopResult) -> Response:
    """A LlamaIndex ``Response``: the answer, the source nodes, and the chain and trace."""
    reading = result.trace.reading
    return Response(
        response=result.answer or "",
        source_nodes=[candidate_to_node(c) for c in result.candidates],
        metadata={
            "chain": [[t.head, t.relation, t.tail] for t in result.chain],
            "unsupported_spans": [] if reading is None else list(reading.unsupported),
            "trace": result.trace.to_dict(),
        },
    )


class CoopQueryEngine(CustomQueryEngine):
    """Chain completion and a concise answer over a :class:`CoopRetriever` with an LLM.

    >>> from llama_index.core.schema import TextNode
    >>> class Fixed(BaseRetriever):
    ...     def _retrieve(self, query_bundle):
    ...         return [NodeWithScore(node=TextNode(id_="a", text="Alpha."), score=0.9)]
    >>> CoopQueryEngine(retriever=CoopRetriever(Fixed(), rala=False))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: CoopQueryEngine needs a CoopRetriever built with an llm (it completes ...
    """

    retriever: CoopRetriever

    def __init__(self, **data: Any) -> None:
        retriever = data.get("retriever")
        if not isinstance(retriever, CoopRetriever) or retriever.client is None:
            raise ValueError(
                "CoopQueryEngine needs a CoopRetriever built with an llm (it completes the "
                "chain and answers)"
            )
        super().__init__(**data)

    def custom_query(self, query_str: str) -> Response:
        return to_response(self.retriever.run(query_str, read=True))

    async def acustom_query(self, query_str: str) -> Response:
        return to_response(await self.retriever.arun(query_str, read=True))
