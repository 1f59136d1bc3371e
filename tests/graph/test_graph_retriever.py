from __future__ import annotations

import logging

import numpy as np
import pytest

from rag_multihop import Candidate, Corpus, Passage, Query, Retriever
from rag_multihop.graph import EdgeWeights, GraphRetriever, HeuristicExtractor, build_entity_graph
from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix

CORPUS = Corpus(
    [
        Passage(
            "wedding", "Polish Wedding is a film directed by Theresa Connelly.", "Polish Wedding"
        ),
        Passage("connelly", "Theresa Connelly is an American director.", "Theresa Connelly"),
        Passage("rope", "Rope is a 1948 film by Alfred Hitchcock.", "Rope"),
        Passage("hitchcock", "Alfred Hitchcock was an English director.", "Alfred Hitchcock"),
        Passage("island", "Nothing links here.", "Lonely Island"),
    ]
)
GRAPH = build_entity_graph(CORPUS)


class FixedRetriever:
    def __init__(self, scored: list[tuple[str, float]]) -> None:
        self.candidates = [Candidate(CORPUS[pid], s) for pid, s in scored]

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.candidates[:k]


def test_query_entities_seed_the_walk_and_reach_the_second_hop():
    retriever = GraphRetriever(GRAPH, CORPUS)
    assert isinstance(retriever, Retriever)
    assert retriever.query_entities("Who is the spouse of the director of Polish Wedding?") == [
        "polish wedding"
    ]
    top = retriever.retrieve(Query("Who is the spouse of the director of Polish Wedding?"), k=3)
    assert [c.id for c in top[:2]] == ["wedding", "connelly"]
    assert all(set(c.signals) == {"graph"} and c.signals["graph"] == c.score for c in top)


def test_scores_equal_ppr_from_the_documented_seed_vector():
    dense = FixedRetriever([("rope", 0.8), ("island", 0.2), ("connelly", 0.1)])
    retriever = GraphRetriever(
        GRAPH, CORPUS, seed_retriever=dense, seed_top_n=2, entity_share=0.25, damping=0.4
    )
    query = Query("Which film did Alfred Hitchcock make?")
    seeds = np.zeros(GRAPH.n_nodes)
    hitchcock = GRAPH.entity_index["alfred hitchcock"]
    seeds[GRAPH.n_passages + hitchcock] = 0.25  # the only query entity takes the entity share
    seeds[GRAPH.passage_index["rope"]] = 0.75 * 0.8
    seeds[GRAPH.passage_index["island"]] = 0.75 * 0.2
    expected = personalized_pagerank(
        transition_matrix(GRAPH.adjacency()), seeds, damping=0.4
    ).scores[: GRAPH.n_passages]
    got = {c.id: c.score for c in retriever.retrieve(query, k=10)}
    assert got == pytest.approx(
        {pid: float(expected[i]) for i, pid in enumerate(GRAPH.passage_ids) if expected[i] > 0}
    )


def test_default_seed_mix_puts_three_quarters_on_the_query_entities():
    dense = FixedRetriever([("rope", 0.8), ("island", 0.2)])
    nodes, weights, entities = GraphRetriever(GRAPH, CORPUS, seed_retriever=dense).seeds(
        "Which film did Alfred Hitchcock make?", dense.candidates
    )
    assert entities == ["alfred hitchcock"]
    on_entities = weights[nodes >= GRAPH.n_passages].sum()
    assert on_entities == pytest.approx(0.75) and weights.sum() == pytest.approx(1.0)


def test_entity_share_one_keeps_dense_seeds_only_for_questions_without_entities():
    dense = FixedRetriever([("rope", 0.8), ("island", 0.2)])
    retriever = GraphRetriever(GRAPH, CORPUS, seed_retriever=dense, entity_share=1.0)
    nodes, _, _ = retriever.seeds("Which film did Alfred Hitchcock make?", dense.candidates)
    assert nodes.tolist() == [GRAPH.n_passages + GRAPH.entity_index["alfred hitchcock"]]
    nodes, weights, entities = retriever.seeds("what is it?", dense.candidates)
    assert entities == [] and weights == pytest.approx([0.8, 0.2])


def test_no_query_entity_and_no_seed_passage_returns_nothing_with_a_warning(caplog):
    retriever = GraphRetriever(GRAPH, CORPUS)
    with caplog.at_level(logging.WARNING):
        assert retriever.retrieve(Query("what is the meaning of life?"), k=3) == []
    assert "no seed for query" in caplog.text


def test_dense_seeds_alone_work_without_entities():
    dense = FixedRetriever([("rope", 0.9)])
    retriever = GraphRetriever(GRAPH, CORPUS, seed_retriever=dense, use_entities=False)
    assert [c.id for c in retriever.retrieve(Query("what is it?"), k=2)] == ["rope", "hitchcock"]


def test_disconnected_seed_is_returned_alone():
    dense = FixedRetriever([("island", 0.9)])
    retriever = GraphRetriever(GRAPH, CORPUS, seed_retriever=dense, use_entities=False)
    top = retriever.retrieve(Query("anything"), k=5)
    assert [c.id for c in top][:1] == ["island"]


def test_rank_with_given_seeds_and_a_seed_outside_the_graph():
    retriever = GraphRetriever(GRAPH, CORPUS, use_entities=False)
    top = retriever.rank(Query("q"), [Candidate(CORPUS["wedding"], 1.0)], k=2)
    assert [c.id for c in top] == ["wedding", "connelly"]
    stranger = Candidate(Passage("elsewhere", "x"), 1.0)
    with pytest.raises(ValueError, match="seed passage 'elsewhere' is not a passage of the graph"):
        retriever.rank(Query("q"), [stranger])


def test_edge_weights_change_the_walk():
    dense = FixedRetriever([("wedding", 1.0)])
    forward_only = GraphRetriever(
        GRAPH,
        CORPUS,
        seed_retriever=dense,
        use_entities=False,
        weights=EdgeWeights(mention=0.0, title_backlink=0.0),
    )
    assert [c.id for c in forward_only.retrieve(Query("q"), k=5)] == ["wedding", "connelly"]


def test_graph_of_another_corpus_and_bad_knobs_are_clear_errors():
    other = Corpus([Passage("x", "y")])
    with pytest.raises(ValueError, match="built from another corpus"):
        GraphRetriever(GRAPH, other)
    with pytest.raises(ValueError, match=r"entity_share must be in \[0, 1\], got 2"):
        GraphRetriever(GRAPH, CORPUS, entity_share=2)
    with pytest.raises(ValueError, match=r"damping must be in \[0, 1\), got 1"):
        GraphRetriever(GRAPH, CORPUS, damping=1)
    with pytest.raises(ValueError, match="seed_top_n must be a positive integer, got 0"):
        GraphRetriever(GRAPH, CORPUS, seed_top_n=0)


def test_seed_candidates_are_not_mutated():
    dense = FixedRetriever([("rope", 0.9), ("wedding", 0.5)])
    before = [(c.score, c.rank, dict(c.signals)) for c in dense.candidates]
    GraphRetriever(GRAPH, CORPUS, seed_retriever=dense).retrieve(Query("Rope?"), k=3)
    assert [(c.score, c.rank, dict(c.signals)) for c in dense.candidates] == before


def test_a_different_query_extractor_than_the_graphs_is_logged(caplog):
    with caplog.at_level(logging.WARNING):
        GraphRetriever(GRAPH, CORPUS, extractor=HeuristicExtractor(include_numbers=False))
    assert "the graph was built with extractor" in caplog.text
