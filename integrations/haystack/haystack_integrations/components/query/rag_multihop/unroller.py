"""``QuestionUnroller``: CoopRAG's question unrolling as a Haystack component.

An LLM (a litellm model string; ``"local"`` for the embedded model) turns the question into
sub-questions and a reasoning chain of (head, relation, tail) triples whose uncertain
entities are masked (the core :class:`rag_multihop.coop.LLMUnroller`, with its repairs and
its one fallback: an unusable reply gives the question alone, flagged). Outputs:

- ``query``: the unrolled question (question + sub-questions + chain, masks left out), the
  text to embed for unrolling-augmented retrieval;
- ``sub_questions``: the sub-questions;
- ``unrolling``: the whole unrolling as a dict (chain, fallback, issues), which
  :class:`~haystack_integrations.components.generators.rag_multihop.ChainAnswerGenerator`
  takes to complete the chain;
- ``trace``: the LLM account of the call.

``api_key`` is ``Secret.from_env_var(...)`` or ``None`` (the provider's own variable); the key
is read at call time, and ``to_dict`` stores the variable's name only.

Example:
    >>> QuestionUnroller(llm="openai/gpt-4o-mini").to_dict()["init_parameters"]["llm"]
    'openai/gpt-4o-mini'
"""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.chat_model import (
    check_any_llm,
    llm_client,
    llm_to_dict,
)
from haystack_integrations.common.rag_multihop.convert import check_api_key

from rag_multihop.coop import LLMUnroller, Unrolling


@component
class QuestionUnroller:
    """Unroll a question with an LLM (see the module docstring).

    Args:
        llm: a litellm model string (``"local"`` for the embedded model) or a Haystack chat
            generator (``OpenAIChatGenerator``, ...; wrapped, see
            :mod:`haystack_integrations.common.rag_multihop.chat_model`).
        api_base: an OpenAI-compatible server URL.
        api_key: ``Secret.from_env_var(...)``, or ``None`` for the provider's own variable.
    """

    def __init__(
        self, *, llm: Any, api_base: str | None = None, api_key: Secret | None = None
    ) -> None:
        self.llm = check_any_llm(llm)
        self.api_base = api_base
        self.api_key = check_api_key(api_key)
        self._unroller: LLMUnroller | None = None

    def warm_up(self) -> None:
        """Set up the LLM client (the local model's server starts on the first call)."""
        self._ready()

    def _ready(self) -> LLMUnroller:
        if self._unroller is None:
            self._unroller = LLMUnroller(llm_client(self.llm, self.api_base, self.api_key))
        return self._unroller

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            llm=llm_to_dict(self.llm),
            api_base=self.api_base,
            api_key=None if self.api_key is None else self.api_key.to_dict(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionUnroller:
        return default_from_dict(cls, data)

    @staticmethod
    def _outputs(unrolling: Unrolling, account: Any) -> dict[str, Any]:
        return {
            "query": unrolling.query_text(),
            "sub_questions": list(unrolling.sub_questions),
            "unrolling": unrolling.to_dict(),
            "trace": {"account": None if account is None else account.to_dict()},
        }

    @component.output_types(
        query=str, sub_questions=list[str], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    def run(self, query: str) -> dict[str, Any]:
        """The unrolled question of ``query`` (see the module docstring)."""
        return self._outputs(*self._ready().unroll(query))

    @component.output_types(
        query=str, sub_questions=list[str], unrolling=dict[str, Any], trace=dict[str, Any]
    )
    async def run_async(self, query: str) -> dict[str, Any]:
        """The async twin of :meth:`run`."""
        return self._outputs(*await self._ready().aunroll(query))
