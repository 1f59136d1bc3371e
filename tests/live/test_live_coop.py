"""The live tier for CoopRAG: unrolling, UAR, RaLa, KeyExtract and reading against the real
embedded local model (marker ``live_llm``). A 135M model's content is poor (it often runs on
until the token cap, so the unrolling may fall back to the raw question), so the assertions
are about shapes, fallbacks and accounting, never content."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.coop import (
    ChainReader,
    CoopRetriever,
    LLMKeyExtractor,
    LLMUnroller,
    RaLaReranker,
)
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.llm import LLMClient, LLMConfigError, LLMSettings, local
from rag_multihop.testing import POLISH_WEDDING_QUESTION

pytestmark = pytest.mark.live_llm


@pytest.fixture(scope="module")
def server() -> Iterator[local.LocalServer]:
    try:
        local.server_binary()
        local.LOCAL_MODELS[local.DEFAULT_LOCAL_MODEL].path()
    except LLMConfigError as exc:
        pytest.skip(f"local model not installed ({exc})")
    yield local.ensure_local_server()
    local.stop_local_servers()


@pytest.fixture
def llm(server: local.LocalServer) -> Iterator[LLMClient]:
    with LLMClient(LLMSettings("local", max_concurrency=4, timeout=300)) as client:
        yield client


def test_coop_end_to_end_sync_and_async(
    llm: LLMClient, minilm, polish_wedding: list[Passage]
) -> None:
    dense = DenseRetriever.from_corpus(Corpus(polish_wedding), minilm)
    coop = CoopRetriever(
        dense,
        unroller=LLMUnroller(llm, max_tokens=160),
        reranker=RaLaReranker(minilm),
        reader=ChainReader(llm, top_k=2, completion_tokens=160, answer_tokens=24),
        key_extractor=LLMKeyExtractor(llm, max_tokens=80),
        keyextract_rounds=1,
        top_k=2,
    )
    for result in (
        coop.run(Query(POLISH_WEDDING_QUESTION, id="q1"), k=3),
        asyncio.run(coop.arun(Query(POLISH_WEDDING_QUESTION, id="q1"), k=3)),
    ):
        trace = result.trace
        assert len(result.candidates) == 3
        assert all("rala" in c.signals for c in result.candidates)
        assert trace.stages == ("unroll", "retrieve", "keyextract", "read")
        assert trace.stop in ("answerable", "budget", "no new sentence", "unusable reply")
        assert trace.reading is not None and isinstance(result.answer, str)
        account = trace.account
        assert account is not None and account.cost == 0.0
        assert account.calls == sum(a.calls for a in trace.accounts.values()) >= 3
        assert trace.unrolling.query_text().startswith(POLISH_WEDDING_QUESTION)
