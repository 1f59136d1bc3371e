"""A key pasted into a component's ``llm``, model name or ``Secret`` variable name is refused
at construction without being shown, so it never reaches ``to_dict`` (the pipeline's YAML),
a repr, an error or a log."""

from __future__ import annotations

import logging
import traceback

import pytest

pytest.importorskip("haystack")

from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.components.embedders.rag_multihop import (
    RagMultihopDocumentEmbedder,
    RagMultihopTextEmbedder,
)
from haystack_integrations.components.generators.rag_multihop import ChainAnswerGenerator
from haystack_integrations.components.query.rag_multihop import QuestionUnroller
from haystack_integrations.components.rankers.rag_multihop import BridgeJudgeRanker, RaLaRanker
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    CoopRetriever,
    EntityGraphRetriever,
)

KEY = "sk-proj-Q8wXz2LmN4pR7tYv1BcD9eFgH3jKsAq6"
RETRIEVER = InMemoryEmbeddingRetriever(InMemoryDocumentStore())

LLM_COMPONENTS = {
    "CoopRetriever": lambda **kw: CoopRetriever(RETRIEVER, **kw),
    "BridgeRetriever": lambda **kw: BridgeRetriever(RETRIEVER, **kw),
    "BridgeJudgeRanker": lambda **kw: BridgeJudgeRanker(**kw),
    "QuestionUnroller": lambda **kw: QuestionUnroller(**kw),
    "ChainAnswerGenerator": lambda **kw: ChainAnswerGenerator(**kw),
}


def _never_shown(error: BaseException, records: list[logging.LogRecord]) -> None:
    assert error.__cause__ is None and error.__context__ is None
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in text
    assert all(KEY not in record.getMessage() for record in records)


@pytest.mark.parametrize("name", list(LLM_COMPONENTS))
def test_a_key_as_llm_is_refused_without_echo(name: str, caplog) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as caught:
        LLM_COMPONENTS[name](llm=KEY)
    assert "llm looks like an API key" in str(caught.value)
    _never_shown(caught.value, caplog.records)


@pytest.mark.parametrize("name", list(LLM_COMPONENTS))
def test_a_key_as_the_secret_variable_name_is_refused_without_echo(name: str, caplog) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as caught:
        LLM_COMPONENTS[name](llm="openai/gpt-4o-mini", api_key=Secret.from_env_var(KEY))
    assert "Secret.from_env_var" in str(caught.value) and "NAME" in str(caught.value)
    _never_shown(caught.value, caplog.records)
    mixed = Secret.from_env_var(["OPENAI_API_KEY", KEY], strict=False)
    with pytest.raises(ValueError):
        LLM_COMPONENTS[name](llm="openai/gpt-4o-mini", api_key=mixed)


@pytest.mark.parametrize("name", list(LLM_COMPONENTS))
def test_real_names_still_serialise(name: str) -> None:
    key = Secret.from_env_var("TEAM_OPENAI_KEY", strict=False)
    data = LLM_COMPONENTS[name](llm="openai/gpt-4o-mini", api_key=key).to_dict()
    params = data["init_parameters"]
    assert params["llm"] == "openai/gpt-4o-mini"
    assert params["api_key"]["env_vars"] == ["TEAM_OPENAI_KEY"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: RagMultihopTextEmbedder(model=KEY),
        lambda: RagMultihopDocumentEmbedder(model=KEY),
        lambda: RaLaRanker(model=KEY),
        lambda: CoopRetriever(RETRIEVER, model=KEY),
        lambda: EntityGraphRetriever(InMemoryDocumentStore(), embedder=KEY),
    ],
    ids=["text-embedder", "document-embedder", "rala", "coop-model", "graph-embedder"],
)
def test_a_key_as_a_model_name_is_refused_without_echo(build, caplog) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as caught:
        build()
    assert "not a sentence-transformers model name" in str(caught.value)
    _never_shown(caught.value, caplog.records)
