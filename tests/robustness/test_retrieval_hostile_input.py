"""Hostile input to every retrieval method's public API: a question given as a bare string,
candidate lists holding something other than candidates, query
embeddings that are not numbers, BM25 knobs out of range. Each gets a one-line
``TypeError``/``ValueError`` naming the argument, or works as meant."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Candidate, Corpus, Passage, Query, rank_candidates
from rag_multihop.bridge import BridgeReranker
from rag_multihop.coop import RaLaReranker
from rag_multihop.coop.states import HiddenStateEncoder
from rag_multihop.graph import GraphRetriever, build_entity_graph
from rag_multihop.index import BM25Retriever, DenseIndex, DenseRetriever
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.testing import HashingEncoder

PASSAGES = [
    Passage("rope", "Rope is a film directed by Alfred Hitchcock.", "Rope"),
    Passage("ah", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
    Passage("psycho", "Psycho is a thriller by Alfred Hitchcock.", "Psycho"),
    Passage("jaws", "Jaws is a film about a shark.", "Jaws"),
]
CORPUS = Corpus(PASSAGES)
ENCODER = HashingEncoder(dim=16, name="hashing-hostile")
VECTORS = ENCODER.encode(CORPUS.texts())
QUESTION = "Who directed Rope?"
NOT_A_QUERY = r"expected a Query, got str 'Who directed Rope\?'; wrap a question's text: Query"
FOUND = [Candidate(p, 1.0 - 0.1 * i) for i, p in enumerate(PASSAGES)]


def _association():
    pytest.importorskip("torch")
    from rag_multihop.association import AssociationReranker, PairSet, TrainingConfig

    config = TrainingConfig(epochs=2, batch_size=4, seed=0)
    return AssociationReranker(encoder=ENCODER, training=config).fit(
        CORPUS.ids, VECTORS, PairSet.from_pairs([("rope", "ah")], source="gold")
    )


def _rala() -> RaLaReranker:
    # no model is loaded: the arguments are checked first
    return RaLaReranker(HiddenStateEncoder(ENCODER, name="hashing"))


def test_bm25_and_the_graph_refuse_a_bare_string_question() -> None:
    with pytest.raises(TypeError, match=NOT_A_QUERY):
        BM25Retriever(CORPUS).retrieve(QUESTION, k=2)  # type: ignore[arg-type]
    graph = GraphRetriever(build_entity_graph(CORPUS), CORPUS)
    with pytest.raises(TypeError, match=NOT_A_QUERY):
        graph.retrieve(QUESTION, k=2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"seed_candidates\[0\] must be a Candidate, got str"):
        graph.rank(Query(QUESTION), ["rope"], k=2)  # type: ignore[list-item]


@pytest.mark.parametrize("make", [_association, lambda: BridgeReranker.llm_free(ENCODER), _rala])
def test_rerankers_refuse_a_bare_string_question_and_items_that_are_no_candidates(make) -> None:
    reranker = make()
    with pytest.raises(TypeError, match=NOT_A_QUERY):
        reranker.rerank(QUESTION, FOUND)
    with pytest.raises(TypeError, match=r"candidates\[1\] must be a Candidate, got str 'ah'"):
        reranker.rerank(Query(QUESTION), [FOUND[0], "ah"])


def test_association_reranks_candidates_given_as_any_iterable() -> None:
    reranker = _association()
    query = Query(QUESTION, embedding=VECTORS[0])
    expected = [c.id for c in reranker.rerank(query, FOUND)]
    assert [c.id for c in reranker.rerank(query, iter(FOUND))] == expected
    assert [c.id for c in reranker.rerank(query, tuple(FOUND), top_n=2)] == expected[:2]


def test_multihop_names_first_stage_candidates_that_are_no_candidates() -> None:
    retriever = MultiHopRetriever(CORPUS, VECTORS, encoder=ENCODER)
    with pytest.raises(TypeError, match=r"candidates\[0\] must be a Candidate, got str 'rope'"):
        retriever.run(Query(QUESTION), 2, candidates=["rope"])  # type: ignore[list-item]


def test_rank_candidates_names_items_that_are_no_candidates() -> None:
    with pytest.raises(TypeError, match=r"candidates\[0\] must be a Candidate, got str 'a'"):
        rank_candidates(["a"])  # type: ignore[list-item]
    assert [c.id for c in rank_candidates(reversed(FOUND))] == [c.id for c in FOUND]


@pytest.mark.parametrize(
    ("embedding", "dtype"),
    [
        (["a"] * 16, "<U1"),
        (np.ones(16, dtype=complex), "complex128"),
        (np.array([{}] * 16, dtype=object), "object"),
    ],
)
def test_a_query_embedding_of_other_than_real_numbers_is_named(embedding, dtype) -> None:
    dense = DenseRetriever(CORPUS, DenseIndex.build(CORPUS.ids, VECTORS), ENCODER)
    query = Query(QUESTION, embedding=embedding)
    with pytest.raises(
        ValueError, match=rf"query embeddings must hold real numbers, got .*{dtype}"
    ):
        dense.retrieve(query, k=2)
    assert dense.retrieve(Query(QUESTION, embedding=np.ones(16, dtype=np.int64)), k=2)


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"k1": float("nan")}, "k1 must be a finite number >= 0, got nan"),
        ({"k1": -1.0}, "k1 must be a finite number >= 0, got -1.0"),
        ({"b": 5}, r"b must be in \[0, 1\], got 5"),
        ({"stemmer": "klingon"}, r"stemmer must be None or a Snowball language, one of \["),
        ({"stemmer": 3}, "stemmer must be None or a Snowball language.*got 3"),
    ],
)
def test_bm25_checks_its_knobs(knobs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BM25Retriever(CORPUS, **knobs)


def test_bm25_takes_a_list_of_passages_like_the_dense_retriever() -> None:
    found = BM25Retriever(PASSAGES).retrieve(Query("Hitchcock thriller"), k=2)
    assert [c.id for c in found][:1] == ["psycho"]
    assert BM25Retriever(CORPUS, stemmer="").retrieve(Query("Hitchcock"), k=5)
