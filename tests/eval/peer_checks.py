"""What the two framework peers' test modules share: the toy corpus, a fixed retriever, the
benchmark context and the checks of a registered peer (imported as ``tests.eval.peer_checks``)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from rag_multihop.corpus import Corpus
from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.methods import available_methods, get_method
from rag_multihop.eval.registry import DEFAULT_PEER_CHILD_K, PEER_CHILD_K_OPTION, peer_child_k
from rag_multihop.protocols import Retriever
from rag_multihop.testing import HashingEncoder
from rag_multihop.types import Candidate, Passage, Query

PASSAGES = [
    Passage("a", "The Eiffel Tower stands in Paris.", title="Eiffel Tower"),
    Passage("b", "Paris is the capital of France.", title="Paris"),
    Passage("c", "Berlin is the capital of Germany.", title="Berlin"),
    Passage("d", "Lyon lies on the Rhone river.", title="Lyon", metadata={"source": "wiki"}),
    Passage("e", "Rome is the capital of Italy.", title="Rome"),
]
CORPUS = Corpus(PASSAGES)


class FixedRetriever:
    """A core Retriever returning a fixed ranked list (its prefix of length ``k``)."""

    def __init__(self, signal: str, scored: list[tuple[str, float]]) -> None:
        self.candidates = [
            Candidate(CORPUS[pid], score, rank=i, signals={signal: score})
            for i, (pid, score) in enumerate(scored, start=1)
        ]
        self.calls: list[tuple[Query, int]] = []

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        self.calls.append((query, k))
        return self.candidates[:k]


def hand_children() -> tuple[FixedRetriever, FixedRetriever]:
    """dense: a 0.9, b 0.8, c 0.1; bm25: b 3.0, d 1.0 (d is found by BM25 only)."""
    dense = FixedRetriever("dense", [("a", 0.9), ("b", 0.8), ("c", 0.1)])
    bm25 = FixedRetriever("bm25", [("b", 3.0), ("d", 1.0)])
    return dense, bm25


def check_inputs_are_not_mutated(
    peer: Retriever, dense: FixedRetriever, bm25: FixedRetriever
) -> None:
    before = (list(dense.candidates), list(bm25.candidates))
    vector = np.array([0.6, 0.8], dtype=np.float32)
    query = Query("capital of France", embedding=vector)
    peer.retrieve(query, k=4)
    assert (dense.candidates, bm25.candidates) == before
    assert [c.score for c in dense.candidates] == [0.9, 0.8, 0.1]
    np.testing.assert_array_equal(query.embedding, np.array([0.6, 0.8], dtype=np.float32))


def check_ranking_does_not_depend_on_k(peer: Retriever) -> None:
    query = Query("capital of France")
    assert peer.retrieve(query, k=2) == peer.retrieve(query, k=4)[:2]
    assert len(peer.retrieve(query, k=50)) == 4  # the fused pool holds 4 passages


def toy_context(**options: object) -> BenchContext:
    """One question over :data:`CORPUS`, embedded by a 16-bucket hashing encoder."""
    encoder = HashingEncoder(dim=16, name="word-hash")
    question = QAExample("q1", "Which capital city has the Eiffel Tower?", (), ("a", "b"), False)
    dataset = Dataset("toy", CORPUS, (question,), "native")
    return BenchContext(
        dataset,
        encoder,
        encoder.encode(CORPUS.texts()),
        encoder.encode([question.question]),
        options=dict(options),
    )


def check_peer_returns_ranked_corpus_candidates(name: str) -> None:
    """The registered peer ``name`` returns k ranked corpus candidates with signals."""
    context = toy_context(**{PEER_CHILD_K_OPTION: "4"})
    peer = get_method(name).build(context)
    (query,) = context.queries()
    found = peer.retrieve(query, k=3)
    assert len(found) == 3
    assert all(c.id in CORPUS and c.passage is CORPUS[c.id] for c in found)
    assert [c.rank for c in found] == [1, 2, 3]
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)
    for c in found:
        assert c.signals["fused"] == c.score
        assert {"dense", "bm25"} & set(c.signals)
    assert peer.bench_extras()[PEER_CHILD_K_OPTION] == 4  # type: ignore[attr-defined]


def check_registered_as_peers(names: Iterable[str]) -> None:
    methods = available_methods()
    for name in names:
        assert methods[name].family == "peer"


def check_child_k_option() -> None:
    assert peer_child_k({}) == DEFAULT_PEER_CHILD_K
    assert peer_child_k({PEER_CHILD_K_OPTION: "7"}) == 7
    assert peer_child_k({PEER_CHILD_K_OPTION: 9}) == 9
    for bad in ("ten", 0, -3, "2.5"):
        with pytest.raises(ValueError, match=PEER_CHILD_K_OPTION):
            peer_child_k({PEER_CHILD_K_OPTION: bad})
