"""A retriever that ranks passages by Personalized PageRank over an :class:`EntityGraph`.

The walk starts from two kinds of seeds, mixed by ``entity_share``:

- **query entities**: the extractor's entities of the query text that are graph entities,
  each weighted by its specificity ``1 / (number of passages mentioning it)`` (HippoRAG);
- **seed passages**: the ``seed_top_n`` best passages of ``seed_retriever`` (e.g. dense),
  each weighted by ``max(score, 0)``. Seed passages can also be passed in directly
  (:meth:`GraphRetriever.rank`), e.g. the documents of an upstream dense retriever.

When only one kind is available for a query it takes all the mass. **When a query has no
seed at all** (no query entity is a graph entity, and no seed passage) the retriever returns
an empty list and logs a warning: an empty list is the honest answer, and fusion treats it
as "this system found nothing". Passages the walk never reaches are not returned, so the
list can be shorter than ``k``.

Candidates carry the signal ``"graph"`` (the PPR mass of the passage).

Example:
    >>> from rag_multihop import Corpus, Passage, Query
    >>> from rag_multihop.graph.build import build_entity_graph
    >>> corpus = Corpus([
    ...     Passage("a", "Polish Wedding is a film by Theresa Connelly.", "Polish Wedding"),
    ...     Passage("b", "Theresa Connelly is an American director.", "Theresa Connelly"),
    ...     Passage("c", "Rope is a 1948 film.", "Rope"),
    ... ])
    >>> retriever = GraphRetriever(build_entity_graph(corpus), corpus)
    >>> [c.id for c in retriever.retrieve(Query("Who directed Polish Wedding?"), k=2)]
    ['a', 'b']
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from rag_multihop._settings import SettingsField, resolve_settings
from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.graph.build import EdgeWeights, EntityGraph
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.graph.ppr import Transition, personalized_pagerank, transition_matrix
from rag_multihop.graph.push import PushGraph, push_pagerank
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.protocols import Retriever
from rag_multihop.tracing import NoSpan, Span, span
from rag_multihop.types import Candidate, Passage, Query, rank_candidates
from rag_multihop.validation import check_candidates, check_positive_int, check_query, loggable

logger = logging.getLogger(__name__)

PUSH_MIN_NODES = 200_000
"""``ppr="auto"`` runs the local push from this many graph nodes up."""

_WALKS: weakref.WeakKeyDictionary[EntityGraph, dict[Any, Any]] = weakref.WeakKeyDictionary()
"""Per graph, its walk matrices by kind and edge weights: every retriever over one graph
(a multihop tail and a fusion's graph child) shares one copy."""

_T = TypeVar("_T")


def _shared_walk(graph: EntityGraph, key: tuple[str, EdgeWeights], make: Callable[[], _T]) -> _T:
    walks = _WALKS.setdefault(graph, {})
    if key not in walks:
        walks[key] = make()
    found: _T = walks[key]
    return found


class GraphRetriever:
    """Personalized PageRank over an entity graph; signal ``"graph"``.

    Args:
        graph: the entity graph of ``corpus`` (checked against it).
        corpus: the passages.
        seed_retriever: any :class:`Retriever` whose top passages seed the walk (dense).
        extractor: finds the query's entities; :class:`HeuristicExtractor` by default. Use
            the extractor the graph was built with.
        settings: :class:`~rag_multihop.graph.settings.GraphSettings` (seed mix, damping,
            ``ppr`` = ``"power"`` (exact), ``"push"`` (local forward push, time independent
            of the graph size, L1 error ``<= push residual``; see
            :mod:`rag_multihop.graph.push`) or ``"auto"`` (push from :data:`PUSH_MIN_NODES`
            graph nodes up), ...).
        seed_top_n, entity_share, use_entities, weights, damping, tol, max_iter, ppr,
            push_epsilon: override the same-named field of ``settings``.
        check_corpus: check that ``graph`` was built from ``corpus`` (a hash of every
            passage); ``False`` only where both come from one snapshot of a
            :class:`~rag_multihop.store.CorpusIndex`, which keeps them consistent.
    """

    seed_top_n = SettingsField()
    entity_share = SettingsField()
    use_entities = SettingsField()
    weights = SettingsField()
    damping = SettingsField()
    tol = SettingsField()
    max_iter = SettingsField()
    ppr = SettingsField()
    push_epsilon = SettingsField()

    def __init__(
        self,
        graph: EntityGraph,
        corpus: Corpus | Sequence[Passage],
        *,
        seed_retriever: Retriever | None = None,
        extractor: EntityExtractor | None = None,
        settings: GraphSettings | None = None,
        seed_top_n: int | None = None,
        entity_share: float | None = None,
        use_entities: bool | None = None,
        weights: EdgeWeights | None = None,
        damping: float | None = None,
        tol: float | None = None,
        max_iter: int | None = None,
        ppr: str | None = None,
        push_epsilon: float | None = None,
        check_corpus: bool = True,
    ) -> None:
        corpus = as_corpus(corpus)
        if check_corpus:
            graph.check_corpus(corpus)
        self.settings = resolve_settings(
            GraphSettings,
            settings,
            seed_top_n=seed_top_n,
            entity_share=entity_share,
            use_entities=use_entities,
            weights=weights,
            damping=damping,
            tol=tol,
            max_iter=max_iter,
            ppr=ppr,
            push_epsilon=push_epsilon,
        )
        self.graph = graph
        self.corpus = corpus
        self.seed_retriever = seed_retriever
        self.extractor = extractor or HeuristicExtractor()
        built_with = graph.settings.get("extractor")
        if built_with is not None and built_with != self.extractor.name:
            logger.warning(
                "the graph was built with extractor %r but queries use %r; query entities may "
                "not match the graph's",
                built_with,
                self.extractor.name,
            )
        self._transition: Transition | None = None
        self._push_graph: PushGraph | None = None

    @property
    def transition(self) -> Transition:
        """The walk's transition matrix (built on first use, shared by the retrievers over
        the same graph and edge weights)."""
        if self._transition is None:
            self._transition = _shared_walk(
                self.graph, ("transition", self.settings.weights), self._new_transition
            )
        return self._transition

    def _new_transition(self) -> Transition:
        return transition_matrix(self.graph.adjacency(self.settings.weights))

    @property
    def uses_push(self) -> bool:
        """Whether queries run the local push (by ``ppr`` and the graph's size)."""
        ppr = self.settings.ppr
        return ppr == "push" or (ppr == "auto" and self.graph.n_nodes >= PUSH_MIN_NODES)

    @property
    def push_graph(self) -> PushGraph:
        """The forward walk for :func:`push_pagerank` (built on first use from the
        adjacency, without the transposed transition; shared like :attr:`transition`)."""
        if self._push_graph is None:
            weights = self.settings.weights
            self._push_graph = _shared_walk(
                self.graph,
                ("push", weights),
                lambda: self.graph.push_walk(weights),
            )
        return self._push_graph

    def query_entities(self, text: str) -> list[str]:
        """The query's entities that are nodes of the graph."""
        index = self.graph.entity_index
        return [name for name in self.extractor.extract([text])[0] if name in index]

    def seeds(
        self, query_text: str, seed_candidates: Sequence[Candidate] = ()
    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Seed nodes, their weights (summing to 1; both empty when there is no seed) and
        the query entities.

        The first ``seed_top_n`` of ``seed_candidates`` seed passages, weighted by
        ``max(score, 0)``; their ids must be passages of the graph. Query entities weigh
        ``1 / frequency``; with both kinds, ``entity_share`` of the mass goes to entities.
        """
        graph = self.graph
        entities = self.query_entities(query_text) if self.settings.use_entities else []
        entity_nodes = [graph.n_passages + graph.entity_index[name] for name in entities]
        entity_weights = [
            1.0 / max(int(graph.entity_frequency[node - graph.n_passages]), 1)
            for node in entity_nodes
        ]
        passage_nodes, passage_weights = [], []
        for candidate in list(seed_candidates)[: self.settings.seed_top_n]:
            if candidate.id not in graph.passage_index:
                raise ValueError(
                    f"seed passage {candidate.id!r} is not a passage of the graph; seeds must "
                    "come from the corpus the graph was built from"
                )
            passage_nodes.append(graph.passage_index[candidate.id])
            passage_weights.append(max(float(candidate.score), 0.0))
        entity_mass, passage_mass = sum(entity_weights), sum(passage_weights)
        if entity_mass > 0 and passage_mass > 0:
            entity_scale = self.settings.entity_share / entity_mass
            passage_scale = (1.0 - self.settings.entity_share) / passage_mass
        elif entity_mass > 0 or passage_mass > 0:
            entity_scale = passage_scale = 1.0 / (entity_mass + passage_mass)
        else:
            entity_scale = passage_scale = 0.0
        nodes = np.asarray(entity_nodes + passage_nodes, dtype=np.int64)
        weights = np.asarray(
            [w * entity_scale for w in entity_weights]
            + [w * passage_scale for w in passage_weights]
        )
        keep = weights > 0
        return nodes[keep], weights[keep], entities

    def seed_vector(
        self, query_text: str, seed_candidates: Sequence[Candidate] = ()
    ) -> tuple[np.ndarray, list[str]]:
        """:meth:`seeds` as one weight per graph node (all zero when there is no seed)."""
        nodes, weights, entities = self.seeds(query_text, seed_candidates)
        vector = np.zeros(self.graph.n_nodes)
        np.add.at(vector, nodes, weights)
        return vector, entities

    def rank(
        self, query: Query, seed_candidates: Sequence[Candidate] = (), k: int = 10
    ) -> list[Candidate]:
        """The ``k`` best passages by PPR from the query's entities and ``seed_candidates``."""
        k = check_positive_int(k, "k")
        query = check_query(query)
        seed_candidates = check_candidates(seed_candidates, "seed_candidates")
        with span("graph.ppr", k=k, algorithm="push" if self.uses_push else "power") as record:
            found = self._rank(query, seed_candidates, k, record)
            record.set(returned=len(found))
        return found

    def _rank(
        self, query: Query, seed_candidates: Sequence[Candidate], k: int, record: Span | NoSpan
    ) -> list[Candidate]:
        nodes, weights, entities = self.seeds(query.text, seed_candidates)
        record.set(seeds=int(nodes.size), query_entities=len(entities))
        used = list(seed_candidates)[: self.settings.seed_top_n]
        if used and not any(c.score > 0 for c in used):
            logger.warning(
                "all %d seed passage(s) of query %s have a score <= 0, which the walk drops "
                "(it weighs a seed by its score); %s",
                len(used),
                loggable(query.text),
                "it starts from the query's entities alone"
                if nodes.size
                else "no query entity is in the graph either: returning no candidates",
            )
        elif nodes.size == 0:
            logger.warning(
                "no seed for query %s: no query entity is in the graph and no seed passage; "
                "returning no candidates",
                loggable(query.text),
            )
        if nodes.size == 0:
            return []
        n_passages = self.graph.n_passages
        if self.uses_push:
            pushed = push_pagerank(
                self.push_graph,
                nodes,
                weights,
                damping=self.settings.damping,
                epsilon=self.settings.push_epsilon,
            )
            record.set(
                ppr_pushes=pushed.pushes,
                ppr_rounds=pushed.rounds,
                ppr_edges_visited=pushed.edges_visited,
                ppr_residual=pushed.residual,
            )
            passages = pushed.support < n_passages
            support, values = pushed.support[passages], pushed.values[passages]
        else:
            seeds = np.zeros(self.graph.n_nodes)
            np.add.at(seeds, nodes, weights)
            walk = personalized_pagerank(
                self.transition,
                seeds,
                damping=self.settings.damping,
                tol=self.settings.tol,
                max_iter=self.settings.max_iter,
            )
            record.set(ppr_iterations=walk.iterations, ppr_residual=walk.residual)
            support, values = np.arange(n_passages), walk.scores[:n_passages]
        return rank_candidates(
            Candidate(self.corpus[i], score, signals={"graph": score})
            for i, score in _top_positive(values, support, k)
        )

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        k = check_positive_int(k, "k")
        query = check_query(query)
        seeds = (
            self.seed_retriever.retrieve(query, k=self.settings.seed_top_n)
            if self.seed_retriever is not None
            else []
        )
        return self.rank(query, seeds, k)

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """:meth:`retrieve` in a worker thread (seed search and PageRank off the event loop)."""
        return await asyncio.to_thread(self.retrieve, query, k)


def _top_positive(values: np.ndarray, nodes: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best of ``nodes`` (ascending; ``values`` their scores) with a positive
    score, with the score, best first (ties by index)."""
    keep = values > 0
    positive, scores = nodes[keep], values[keep]
    if positive.size > k:
        best = np.argpartition(-scores, k - 1)[:k]
        positive, scores = positive[best], scores[best]
    order = np.argsort(-scores, kind="stable")
    return list(zip(positive[order].tolist(), scores[order].tolist(), strict=True))
