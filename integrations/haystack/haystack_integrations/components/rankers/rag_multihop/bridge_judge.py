"""``BridgeJudgeRanker``: BridgeRAG's bridge-conditioned judge as a Haystack ranker.

The incoming document with the highest score is the bridge; every other document is judged
given (question, bridge, bridge entities), and the judge and incoming scores are fused with
PIT (weight ``alpha`` on the incoming scores) by the core
:class:`rag_multihop.bridge.rerank.BridgeReranker`. Without ``llm`` the LLM-free embedding +
title-mention judge runs (``embedder``, default the bundled all-MiniLM-L6-v2); with ``llm``
(a litellm model string) the tripartite LLM judge, one call per document, concurrently.
Documents come back as new objects (``dataclasses.replace``) with the new score and the
signals in ``meta["rag_multihop_signals"]``. ``to_dict`` stores the model string and the key
variable's name only; a token secret is refused.

Example:
    >>> from haystack.utils import Secret
    >>> ranker = BridgeJudgeRanker(
    ...     llm="openai/gpt-4o-mini", api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False)
    ... )
    >>> ranker.to_dict()["init_parameters"]["api_key"]
    {'type': 'env_var', 'env_vars': ['OPENAI_API_KEY'], 'strict': False}
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import (
    check_any_llm,
    llm_client,
    llm_to_dict,
)
from haystack_integrations.common.rag_multihop.convert import (
    as_encoder,
    candidate_to_document,
    check_api_key,
    check_embedder,
    document_to_candidate,
    embedder_to_dict,
    rerank_documents,
)

from rag_multihop.bridge import BridgeSettings
from rag_multihop.bridge.rerank import BridgeReranker
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int


@component
class BridgeJudgeRanker:
    """Judge documents against the top document as bridge (see the module docstring).

    Args:
        top_k: documents returned (``run(top_k=...)`` overrides it).
        llm: a litellm model string or a Haystack chat generator
            (wrapped, see :mod:`haystack_integrations.common.rag_multihop.chat_model`) for the LLM
            judge; ``None`` for the LLM-free judge.
        api_base: an OpenAI-compatible server URL (with a model string).
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
        embedder: embeds texts for the LLM-free judge: a Haystack text or document embedder
            component, a sentence-transformers model name, or ``None`` (the bundled MiniLM).
        alpha: weight of the incoming scores in the fusion, in [0, 1].
        bridge_position: ``"first"`` or ``"judged"``. ``alpha`` and ``bridge_position`` are
            :class:`rag_multihop.bridge.BridgeSettings` fields (defaults and checks are the
            core's), kept as :attr:`settings`.
    """

    def __init__(
        self,
        *,
        top_k: int = 10,
        llm: Any = None,
        api_base: str | None = None,
        api_key: Secret | None = None,
        embedder: Any = None,
        alpha: float = BridgeSettings.alpha,
        bridge_position: str = BridgeSettings.bridge_position,
    ) -> None:
        self.top_k = check_positive_int(top_k, "top_k")
        self.llm = None if llm is None else check_any_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self.embedder = check_embedder(embedder)
        self.settings = BridgeSettings(alpha=alpha, bridge_position=bridge_position)
        self._core: BridgeReranker | None = None

    def warm_up(self) -> None:
        """Load the encoder (LLM-free) or set up the LLM client (once)."""
        self._ready()

    def _ready(self) -> BridgeReranker:
        if self._core is None:
            if self.llm is None:
                self._core = BridgeReranker.llm_free(
                    as_encoder(self.embedder), settings=self.settings
                )
            else:
                client = llm_client(self.llm, self.api_base, self.api_key)
                self._core = BridgeReranker.with_llm(client, settings=self.settings)
        return self._core

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            top_k=self.top_k,
            llm=llm_to_dict(self.llm),
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            embedder=embedder_to_dict(self.embedder),
            alpha=self.settings.alpha,
            bridge_position=self.settings.bridge_position,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BridgeJudgeRanker:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The ``top_k`` best documents after judging, as new ``Document`` objects."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        return {"documents": rerank_documents(self._ready(), query, documents, limit)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The async twin of :meth:`run` (LLM judge calls concurrent)."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        if not documents:
            return {"documents": []}
        candidates = [document_to_candidate(d) for d in documents]
        ranked = await self._ready().arerank(Query(query), candidates, limit)
        return {"documents": [candidate_to_document(c) for c in ranked]}
