"""A key pasted into a component's ``llm``, model name or ``api_key_env`` is refused at
construction without being shown: not in the error (nor a pydantic error, which would echo
its input), a chained exception, a repr or a log."""

from __future__ import annotations

import logging
import traceback

import pytest

pytest.importorskip("llama_index.core")

from li_fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.postprocessor.rag_multihop import BridgeJudgeRerank, RaLaRerank
from llama_index.retrievers.rag_multihop import (
    BridgeRetriever,
    CoopRetriever,
    UnrollingQueryTransform,
)

KEY = "sk-ant-api03-Zq7Xw2Vb9Nm4Lk1Jh8Gf5Dd3Ss6Aa0PpOoIiUuYyTtRrEe"


@pytest.fixture(scope="module")
def base():
    nodes = [TextNode(id_="a", text="Rope is a film.", metadata={"title": "Rope"})]
    return VectorStoreIndex(nodes, embed_model=HashingEmbedding()).as_retriever()


def _refused(build, caplog, match: str) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as caught:
        build()
    error = caught.value
    assert match in str(error)
    assert error.__cause__ is None and error.__context__ is None
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in text
    assert all(KEY not in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    "name", ["CoopRetriever", "BridgeRetriever", "BridgeJudgeRerank", "UnrollingQueryTransform"]
)
def test_a_key_as_llm_is_refused_without_echo(name: str, base, caplog) -> None:
    builds = {
        "CoopRetriever": lambda: CoopRetriever(base, llm=KEY, rala=False),
        "BridgeRetriever": lambda: BridgeRetriever(base, llm=KEY),
        "BridgeJudgeRerank": lambda: BridgeJudgeRerank(llm=KEY),
        "UnrollingQueryTransform": lambda: UnrollingQueryTransform(llm=KEY),
    }
    _refused(builds[name], caplog, "llm looks like an API key")


def test_a_key_as_api_key_env_is_refused_without_echo(base, caplog) -> None:
    for build in (
        lambda: CoopRetriever(base, llm="openai/gpt-4o-mini", api_key_env=KEY, rala=False),
        lambda: BridgeRetriever(base, llm="openai/gpt-4o-mini", api_key_env=KEY),
        lambda: BridgeJudgeRerank(llm="openai/gpt-4o-mini", api_key_env=KEY),
        lambda: UnrollingQueryTransform(llm="openai/gpt-4o-mini", api_key_env=KEY),
    ):
        _refused(build, caplog, "NAME of the environment variable")


def test_a_key_as_a_model_name_is_refused_without_echo(base, caplog) -> None:
    for build in (
        lambda: RaLaRerank(model=KEY),
        lambda: RagMultihopEmbedding(model_name=KEY),
        lambda: CoopRetriever(base, model=KEY),
    ):
        _refused(build, caplog, "not a sentence-transformers model name")


def test_real_names_are_kept(base) -> None:
    judge = BridgeJudgeRerank(llm="openai/gpt-4o-mini", api_key_env="TEAM_KEY")
    assert judge.to_dict()["llm"] == "openai/gpt-4o-mini"
    assert RaLaRerank(model="sentence-transformers/all-MiniLM-L6-v2").model is not None
    assert UnrollingQueryTransform(llm="ollama/llama3").llm == "ollama/llama3"
