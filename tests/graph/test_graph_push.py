"""Local forward-push PPR: exactness bound, agreement with power iteration, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from rag_multihop import Candidate, Corpus, Passage, Query
from rag_multihop.eval.graph_scale import synthetic_graph
from rag_multihop.graph import GraphRetriever, build_entity_graph
from rag_multihop.graph import retriever as graph_retriever
from rag_multihop.graph.ppr import personalized_pagerank, transition_matrix
from rag_multihop.graph.push import PushGraph, push_pagerank


def random_graph(n: int, seed: int) -> sparse.csr_matrix:
    rng = np.random.default_rng(seed)
    adjacency = sparse.random(n, n, density=4 / n, random_state=seed, format="csr")
    adjacency.data[:] = rng.random(adjacency.nnz) + 0.1
    return adjacency


def test_chain_hand_case_is_exact_for_a_tiny_epsilon():
    # 0 -> 1 -> 2, node 2 dangling (its walks restart at the seed); d = 0.5
    chain = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)
    result = push_pagerank(PushGraph.from_transition(transition_matrix(chain)), [0], epsilon=1e-12)
    np.testing.assert_allclose(result.scores, [4 / 7, 2 / 7, 1 / 7], atol=1e-10)
    assert result.residual < 1e-10
    assert result.support.tolist() == [0, 1, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("epsilon", [1e-3, 1e-5, 1e-8])
def test_error_is_the_residual_and_scores_never_overshoot(seed, epsilon):
    transition = transition_matrix(random_graph(300, seed))
    seeds = np.zeros(300)
    seeds[[3, 50, 51]] = [1.0, 2.0, 0.5]
    exact = personalized_pagerank(transition, seeds, tol=1e-13, max_iter=2000).scores
    result = push_pagerank(
        PushGraph.from_transition(transition), [3, 50, 51], [1.0, 2.0, 0.5], epsilon=epsilon
    )
    assert np.abs(exact - result.scores).sum() == pytest.approx(result.residual, abs=1e-9)
    assert (result.scores <= exact + 1e-12).all()
    assert set(np.flatnonzero(result.scores).tolist()) == set(result.support.tolist())


def test_smaller_epsilon_leaves_less_residual():
    graph = PushGraph.from_transition(transition_matrix(random_graph(400, 7)))
    residuals = [push_pagerank(graph, [1, 2], epsilon=e).residual for e in (1e-3, 1e-5, 1e-7)]
    assert residuals[0] > residuals[1] > residuals[2]


def test_a_push_costs_what_it_visits_and_leaves_nothing_behind():
    # one thread's pushes share a zeroed workspace: no O(nodes) vector per query, and a
    # push on a second graph, or after a bigger one, scores as on a fresh thread
    from concurrent.futures import ThreadPoolExecutor

    from rag_multihop.graph import push as push_module

    big = PushGraph.from_transition(transition_matrix(random_graph(5000, 4)))
    small = PushGraph.from_transition(transition_matrix(random_graph(300, 5)))

    def run() -> list[np.ndarray]:
        return [push_pagerank(g, [1, 2], epsilon=1e-6).scores for g in (small, big, small)]

    with ThreadPoolExecutor(1) as fresh:
        expected = fresh.submit(run).result()
    here = run()
    for got, want in zip(here + run(), expected + expected, strict=True):
        assert np.array_equal(got, want)
    scores, residual = push_module._workspace(big.n_nodes)
    assert not scores.any() and not residual.any()
    result = push_pagerank(big, [7], epsilon=1e-3)
    assert result.support.size < big.n_nodes / 10  # local: far fewer nodes than the graph
    assert np.array_equal(result.scores[result.support], result.values)


def test_duplicate_seed_nodes_add_up():
    graph = PushGraph.from_transition(transition_matrix(random_graph(100, 3)))
    twice = push_pagerank(graph, [5, 5, 9], [1.0, 1.0, 2.0], epsilon=1e-9)
    once = push_pagerank(graph, [5, 9], [2.0, 2.0], epsilon=1e-9)
    np.testing.assert_allclose(twice.scores, once.scores, atol=1e-12)


def test_work_follows_the_answer_not_the_graph_size():
    # same local structure, 10x more passages: the edges a query visits barely change
    small, large = synthetic_graph(2_000, seed=1), synthetic_graph(20_000, seed=1)
    visited = []
    for graph in (small, large):
        push = PushGraph.from_transition(transition_matrix(graph.adjacency()))
        visited.append(push_pagerank(push, [0, 1, 2, 3, 4], epsilon=1e-4).edges_visited)
    assert visited[1] < 3 * visited[0]


@pytest.mark.parametrize(
    ("nodes", "weights", "kwargs", "message"),
    [
        ([], None, {}, "no positive seed"),
        ([1, 2], [0.0, 0.0], {}, "no positive seed"),
        ([1], [-1.0], {}, "finite and >= 0"),
        ([1], [float("nan")], {}, "finite and >= 0"),
        ([1, 2], [1.0], {}, "one weight per seed node"),
        ([99], None, {}, r"node indices in \[0, 10\)"),
        ([-1], None, {}, r"node indices in \[0, 10\)"),
        ([1], None, {"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ([1], None, {"epsilon": float("nan")}, "epsilon must be a finite number > 0"),
        ([1], None, {"damping": 1.0}, r"damping must be in \[0, 1\)"),
    ],
)
def test_bad_input_is_named(nodes, weights, kwargs, message):
    graph = PushGraph.from_transition(transition_matrix(random_graph(10, 0)))
    with pytest.raises(ValueError, match=message):
        push_pagerank(graph, nodes, weights, **kwargs)


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


def test_retriever_push_ranks_like_power_iteration():
    graph = build_entity_graph(CORPUS)
    query = Query("Who is the spouse of the director of Polish Wedding?")
    seeds = [Candidate(CORPUS["rope"], 0.4)]
    power = GraphRetriever(graph, CORPUS, ppr="power").rank(query, seeds, k=4)
    push = GraphRetriever(graph, CORPUS, ppr="push", push_epsilon=1e-9).rank(query, seeds, k=4)
    assert [c.id for c in push] == [c.id for c in power]
    for a, b in zip(push, power, strict=True):
        assert a.signals["graph"] == pytest.approx(b.signals["graph"], abs=1e-6)


def test_auto_switches_to_push_on_large_graphs(monkeypatch):
    graph = build_entity_graph(CORPUS)
    assert not GraphRetriever(graph, CORPUS).uses_push
    monkeypatch.setattr(graph_retriever, "PUSH_MIN_NODES", graph.n_nodes)
    assert GraphRetriever(graph, CORPUS).uses_push
    assert not GraphRetriever(graph, CORPUS, ppr="power").uses_push


def test_unknown_ppr_method_lists_the_choices():
    graph = build_entity_graph(CORPUS)
    with pytest.raises(
        ValueError, match=r"ppr must be one of \['auto', 'power', 'push'\], got 'pag"
    ):
        GraphRetriever(graph, CORPUS, ppr="pagerank")
    with pytest.raises(ValueError, match="push_epsilon must be a finite number > 0"):
        GraphRetriever(graph, CORPUS, push_epsilon=-1)


def test_the_push_graph_from_the_adjacency_is_the_one_from_the_transition() -> None:
    rng = np.random.default_rng(5)
    rows, cols = rng.integers(0, 300, size=(2, 2000))
    weights = rng.choice([0.5, 1.0, 2.0], size=2000)
    keep = rows != 7  # a dangling node
    adjacency = sparse.coo_matrix(
        (weights[keep], (rows[keep], cols[keep])), shape=(300, 300)
    ).tocsr()  # with duplicate entries
    direct = PushGraph.from_adjacency(adjacency)
    made = PushGraph.from_transition(transition_matrix(adjacency))
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(direct.forward, name), getattr(made.forward, name))
    assert np.array_equal(direct.degree_floor, made.degree_floor)
    assert np.array_equal(direct.dangling, made.dangling) and direct.dangling[7]


def test_retrievers_over_one_graph_share_one_walk() -> None:
    corpus = Corpus(
        [Passage(f"p{i}", f"Rex Nolan met Ada Byron in Lyon {i}.", f"T{i}") for i in range(6)]
    )
    graph = build_entity_graph(corpus)
    first = GraphRetriever(graph, corpus, ppr="push")
    second = GraphRetriever(graph, corpus, ppr="push")
    assert first.push_graph is second.push_graph
    assert GraphRetriever(graph, corpus).transition is GraphRetriever(graph, corpus).transition
