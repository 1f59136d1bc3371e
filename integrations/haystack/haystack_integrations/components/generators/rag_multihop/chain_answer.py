"""``ChainAnswerGenerator``: CoopRAG's chain completion and answer as a Haystack component.

Given the question, the retrieved documents and (optionally) the ``unrolling`` output of
:class:`~haystack_integrations.components.query.rag_multihop.QuestionUnroller`, the core
:class:`rag_multihop.coop.ChainReader` makes two LLM calls: the reasoning chain's masks and
answer slot are filled from the top ``top_k`` documents, then a concise answer is generated
(``"yes"``/``"no"`` for yes/no questions, by schema). Spans the documents do not contain
(invented entities, an invented answer) are detected and listed. Without an unrolling the
question alone is answered (one call).

Outputs: ``answers`` (one ``GeneratedAnswer`` whose ``documents`` are the documents shown and
whose ``meta`` holds the completed chain, the unsupported spans and the issues), ``chain``
and ``trace`` (the LLM accounts of both calls).

Example:
    >>> ChainAnswerGenerator(llm="openai/gpt-4o-mini").to_dict()["init_parameters"]["top_k"]
    5
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import GeneratedAnswer
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import (
    check_any_llm,
    llm_client,
    llm_to_dict,
)
from haystack_integrations.common.rag_multihop.convert import (
    check_api_key,
    document_to_passage,
)

from rag_multihop.coop import ChainReader, Reading, Unrolling, raw_question
from rag_multihop.validation import check_positive_int


@component
class ChainAnswerGenerator:
    """Complete the reasoning chain and answer (see the module docstring).

    Args:
        llm: a litellm model string (``"local"`` for the embedded model) or a Haystack chat
            generator (``OpenAIChatGenerator``, ...; wrapped, see
            :mod:`haystack_integrations.common.rag_multihop.chat_model`).
        api_base: an OpenAI-compatible server URL.
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
        top_k: documents shown to the model.
    """

    def __init__(
        self,
        *,
        llm: Any,
        api_base: str | None = None,
        api_key: Secret | None = None,
        top_k: int = 5,
    ) -> None:
        self.llm = check_any_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self.top_k = check_positive_int(top_k, "top_k")
        self._reader: ChainReader | None = None

    def warm_up(self) -> None:
        """Set up the LLM client."""
        self._ready()

    def _ready(self) -> ChainReader:
        if self._reader is None:
            client = llm_client(self.llm, self.api_base, self.api_key)
            self._reader = ChainReader(client, top_k=self.top_k)
        return self._reader

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            llm=llm_to_dict(self.llm),
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
            top_k=self.top_k,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChainAnswerGenerator:
        return default_from_dict(cls, data)

    @staticmethod
    def _inputs(
        query: str, documents: list[Document], unrolling: dict[str, Any] | None
    ) -> tuple[Unrolling, list[Any]]:
        if not documents:
            raise ValueError("ChainAnswerGenerator needs at least one document to answer from")
        unrolled = raw_question(query) if unrolling is None else Unrolling.from_dict(unrolling)
        return unrolled, [document_to_passage(d) for d in documents]

    def _outputs(self, query: str, documents: list[Document], reading: Reading) -> dict[str, Any]:
        chain = [[t.head, t.relation, t.tail] for t in reading.chain]
        answer = GeneratedAnswer(
            data=reading.answer,
            query=query,
            documents=documents[: self.top_k],
            meta={
                "chain": chain,
                "unsupported_spans": list(reading.unsupported),
                "issues": list(reading.issues),
                "binary": reading.binary,
            },
        )
        trace = {"accounts": {k: v.to_dict() for k, v in reading.calls.items()}}
        return {"answers": [answer], "chain": chain, "trace": trace}

    @component.output_types(answers=list[GeneratedAnswer], chain=list[Any], trace=dict[str, Any])
    def run(
        self, query: str, documents: list[Document], unrolling: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The answer of ``query`` from ``documents`` (see the module docstring)."""
        unrolled, passages = self._inputs(query, documents, unrolling)
        return self._outputs(query, documents, self._ready().read(unrolled, passages))

    @component.output_types(answers=list[GeneratedAnswer], chain=list[Any], trace=dict[str, Any])
    async def run_async(
        self, query: str, documents: list[Document], unrolling: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The async twin of :meth:`run`."""
        unrolled, passages = self._inputs(query, documents, unrolling)
        return self._outputs(query, documents, await self._ready().aread(unrolled, passages))
