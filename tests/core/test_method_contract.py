"""One contract for every method class (issue 21): ``X(<what it stands on>, *, settings=None,
<typed overrides>)`` through ``resolve_settings``; ``None`` keeps the default; a bad value gets
the settings object's message and an unknown name Python's own ``TypeError``; pluggable parts
are checked against their protocols; every retriever has ``aretrieve`` giving what
``retrieve`` gives; ``CoopRAG`` still imports, with a ``DeprecationWarning``."""

from __future__ import annotations

import ast
import asyncio
import importlib
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from rag_multihop import Candidate, Corpus, Passage, Query
from rag_multihop.bridge import BridgeRetriever, BridgeSettings
from rag_multihop.coop import (
    CoopRetriever,
    CoopSettings,
    RaLaReranker,
    RaLaRetriever,
    RaLaSettings,
    UARRetriever,
    Unrolling,
)
from rag_multihop.coop.states import HiddenStateEncoder
from rag_multihop.fusion import FusionRetriever
from rag_multihop.graph import GraphRetriever, build_entity_graph
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.reranked import RerankedRetriever
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

CORPUS = Corpus(polish_wedding_passages())


def dense() -> DenseRetriever:
    return DenseRetriever.from_corpus(CORPUS, HashingEncoder())


def rala(**overrides: Any) -> RaLaReranker:
    return RaLaReranker(HiddenStateEncoder(HashingEncoder()), **overrides)  # loads lazily


class Halves:
    """An unroller without I/O: the question's two halves as sub-questions."""

    def unroll(self, question: str) -> tuple[Unrolling, None]:
        words = question.split()
        return Unrolling(question, (" ".join(words[:4]), " ".join(words[4:]))), None

    async def aunroll(self, question: str) -> tuple[Unrolling, None]:
        return self.unroll(question)


class Flip:
    """A reranker: the candidates in reverse order."""

    def rerank(
        self, query: Query, candidates: Sequence[Candidate], top_n: int | None = None
    ) -> list[Candidate]:
        flipped = [c.with_score(float(i)) for i, c in enumerate(candidates)][::-1]
        return flipped[:top_n]


# ---------------------------------------------------------------- constructors


def test_none_keeps_every_default() -> None:
    assert CoopRetriever(dense(), candidates=None, top_k=None).settings == CoopSettings()
    assert rala(candidates=None, scoring=None).settings == RaLaSettings()
    assert UARRetriever(dense(), uar_mode=None).settings == CoopSettings()
    bridge = BridgeRetriever.llm_free(dense(), alpha=None, pool_cap=None)
    assert bridge.settings == BridgeSettings()


def test_overrides_replace_single_fields_of_the_settings_given() -> None:
    coop = CoopRetriever(dense(), settings=CoopSettings(top_k=3), candidates=7)
    assert coop.settings == CoopSettings(candidates=7, top_k=3)
    assert coop.uar.settings.uar_mode == "concatenate"
    assert CoopRetriever(dense(), uar_mode="sub-questions").uar.settings.uar_mode == (
        "sub-questions"
    )
    reranker = rala(settings=RaLaSettings(buckets=2), scoring="gap-weighted")
    assert (reranker.settings.buckets, reranker.settings.scoring) == (2, "gap-weighted")
    bridge = BridgeRetriever.llm_free(
        dense(), settings=BridgeSettings(alpha=0.3), pool_cap=5, templates=["question"]
    )
    assert (bridge.settings.alpha, bridge.settings.pool_cap) == (0.3, 5)
    assert bridge.writer.templates == ("question",)  # the default writer reads the override
    assert RaLaRetriever(dense(), rala(candidates=30)).candidates == 30
    assert RaLaRetriever(dense(), rala(), candidates=5).candidates == 5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: CoopRetriever(dense(), candidates=0),
            "candidates must be a positive integer, got 0",
        ),
        (lambda: CoopRetriever(dense(), top_k=1.5), "top_k must be a positive integer, got 1.5"),
        (lambda: CoopRetriever(dense(), uar_mode="each"), r"uar_mode must be one of \['conc"),
        (lambda: UARRetriever(dense(), uar_mode="each"), r"uar_mode must be one of \['conc"),
        (lambda: rala(scoring="eq5"), r"scoring must be one of \['gap-weighted'"),
        (lambda: rala(candidates=-1), "candidates must be a positive integer, got -1"),
        (lambda: RaLaRetriever(dense(), rala(), candidates=0), "candidates must be a positive"),
        (lambda: BridgeRetriever.llm_free(dense(), alpha=2), r"alpha must be in \[0, 1\], got 2"),
        (lambda: BridgeRetriever.llm_free(dense(), bridge_position="last"), "bridge_position"),
        (lambda: CoopRetriever.with_llm(dense(), "openai/x", top_k=0), "top_k must be a positive"),
    ],
)
def test_bad_override_values_get_the_settings_message(
    make: Callable[[], Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: CoopRetriever(dense(), candidate=3), "candidate"),
        (lambda: rala(scorng="maxsim"), "scorng"),
        (lambda: UARRetriever(dense(), mode="sub-questions"), "mode"),
        (lambda: BridgeRetriever.llm_free(dense(), alpah=0.2), "alpah"),
    ],
)
def test_an_unknown_override_is_a_type_error_naming_it(make: Callable[[], Any], name: str) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        make()


def test_settings_are_keyword_only_and_of_the_right_class() -> None:
    with pytest.raises(TypeError, match="positional"):
        RaLaReranker(HiddenStateEncoder(HashingEncoder()), RaLaSettings())  # type: ignore[misc]
    with pytest.raises(TypeError, match="settings must be a CoopSettings, got RaLaSettings"):
        CoopRetriever(dense(), settings=RaLaSettings())  # type: ignore[arg-type]


def test_pluggable_parts_must_implement_their_protocol_with_its_async_twin() -> None:
    class SyncOnly:
        def unroll(self, question: str) -> tuple[Unrolling, None]:
            return Unrolling(question), None

        def extract(self, search_text: str, passages: Sequence[Passage]) -> None:
            return None

    with pytest.raises(TypeError, match="unroller must implement unroll and aunroll, got SyncOnly"):
        CoopRetriever(dense(), unroller=SyncOnly())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key_extractor must implement extract and aextract"):
        CoopRetriever(dense(), keyextract_rounds=1, key_extractor=SyncOnly())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reranker must implement rerank, got object"):
        RerankedRetriever(dense(), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="base must be a Retriever"):
        RerankedRetriever(object(), Flip())  # type: ignore[arg-type]


# ---------------------------------------------------------------- the old name


@pytest.mark.parametrize("module", ["rag_multihop.coop", "rag_multihop.coop.pipeline"])
def test_coop_rag_is_a_deprecated_alias_of_coop_retriever(module: str) -> None:
    with pytest.warns(DeprecationWarning, match="CoopRAG is deprecated; use .*CoopRetriever"):
        alias = importlib.import_module(module).CoopRAG
    assert alias is CoopRetriever
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from rag_multihop.coop import CoopRetriever as current  # no warning for the new name
    assert current is CoopRetriever
    with pytest.raises(AttributeError, match="has no attribute 'CoopRag'"):
        _ = importlib.import_module(module).CoopRag


# ---------------------------------------------------------------- async twins


def _retrievers() -> dict[str, Any]:
    graph = build_entity_graph(CORPUS)
    return {
        "coop": CoopRetriever(dense(), unroller=Halves(), uar_mode="sub-questions"),
        "uar": UARRetriever(dense(), Halves(), uar_mode="sub-questions"),
        "reranked": RerankedRetriever(dense(), Flip(), candidates=4),
        "fusion": FusionRetriever(
            {"dense": dense(), "graph": GraphRetriever(graph, CORPUS, seed_retriever=dense())}
        ),
        "graph": GraphRetriever(graph, CORPUS, seed_retriever=dense()),
        "bridge": BridgeRetriever.llm_free(dense()),
    }


@pytest.mark.parametrize("name", sorted(_retrievers()))
def test_aretrieve_gives_what_retrieve_gives(name: str) -> None:
    retriever = _retrievers()[name]
    query = Query(POLISH_WEDDING_QUESTION, id="q1")
    sync = retriever.retrieve(query, k=4)
    asynchronous = asyncio.run(retriever.aretrieve(query, k=4))
    assert sync, name
    assert [(c.id, c.score, c.rank, dict(c.signals)) for c in asynchronous] == [
        (c.id, c.score, c.rank, dict(c.signals)) for c in sync
    ]


def test_every_method_class_with_run_has_arun_and_every_retriever_aretrieve() -> None:
    for name, retriever in _retrievers().items():
        assert callable(getattr(retriever, "aretrieve", None)), name
        if hasattr(retriever, "run"):
            assert callable(getattr(retriever, "arun", None)), name


class SlowDense:
    """A retriever whose search blocks its thread (a slow vector store)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.inner = seconds, dense()

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        import time

        time.sleep(self.seconds)
        return self.inner.retrieve(query, k=k)


async def _ticks_during(coroutine: Any) -> tuple[Any, int]:
    """Run ``coroutine`` beside a ticker; how many 5 ms ticks the loop ran meanwhile."""
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await coroutine
    finally:
        done.set()
        await task
    return result, ticks


@pytest.mark.parametrize("mode", ["concatenate", "sub-questions"])
def test_coop_arun_searches_off_the_event_loop(mode: str) -> None:
    coop = CoopRetriever(SlowDense(0.2), unroller=Halves(), uar_mode=mode, reranker=None)
    query = Query(POLISH_WEDDING_QUESTION, id="q1")
    result, ticks = asyncio.run(_ticks_during(coop.arun(query, k=3)))
    # a search on the loop would leave the ticker at most one tick in 0.2 s (or 0.6 s)
    assert ticks >= 10, ticks
    assert [c.id for c in result.candidates] == [c.id for c in coop.run(query, k=3).candidates]


def test_uar_arun_searches_off_the_event_loop() -> None:
    uar = UARRetriever(SlowDense(0.2), Halves())
    result, ticks = asyncio.run(_ticks_during(uar.arun(Query(POLISH_WEDDING_QUESTION), k=3)))
    assert ticks >= 10, ticks
    assert len(result.candidates) == 3


# ---------------------------------------------------------------- imports point down

METHOD_PACKAGES = ("association", "bridge", "coop", "fusion", "graph", "multihop")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):  # lazy imports inside functions count too
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("package", METHOD_PACKAGES)
def test_method_packages_never_import_eval_or_the_cli(package: str) -> None:
    root = Path(importlib.import_module("rag_multihop").__file__).parent  # type: ignore[arg-type]
    upward = {
        f"{path.relative_to(root)}: {name}"
        for path in (root / package).rglob("*.py")
        for name in _imported_modules(path)
        if name.startswith(("rag_multihop.eval", "rag_multihop.cli", "rag_multihop.demo"))
    }
    assert not upward, sorted(upward)
