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

import logging
from collections.abc import Sequence

import numpy as np

from rag_multihop.corpus import Corpus
from rag_multihop.graph.build import EdgeWeights, EntityGraph
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.graph.ppr import Transition, personalized_pagerank, transition_matrix
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query, rank_candidates
from rag_multihop.validation import check_fraction, check_positive_int

logger = logging.getLogger(__name__)


class GraphRetriever:
    """Personalized PageRank over an entity graph; signal ``"graph"``.

    Args:
        graph: the entity graph of ``corpus`` (checked against it).
        corpus: the passages.
        seed_retriever: any :class:`Retriever` whose top passages seed the walk (dense).
        extractor: finds the query's entities; :class:`HeuristicExtractor` by default. Use
            the extractor the graph was built with.
        seed_top_n: how many of the seed retriever's passages seed the walk.
        entity_share: share of the seed mass on query entities when both kinds exist.
        use_entities: seed from query entities at all.
        weights: edge-kind weights of the walk (:class:`EdgeWeights`).
        damping: probability of another step, ``[0, 1)``.
        tol, max_iter: power-iteration stop rule.
    """

    def __init__(
        self,
        graph: EntityGraph,
        corpus: Corpus,
        *,
        seed_retriever: Retriever | None = None,
        extractor: EntityExtractor | None = None,
        seed_top_n: int = 2,
        entity_share: float = 0.5,
        use_entities: bool = True,
        weights: EdgeWeights | None = None,
        damping: float = 0.5,
        tol: float = 1e-8,
        max_iter: int = 100,
    ) -> None:
        graph.check_corpus(corpus)
        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), got {damping!r}")
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
        self.seed_top_n = check_positive_int(seed_top_n, "seed_top_n")
        self.entity_share = check_fraction(entity_share, "entity_share")
        self.use_entities = use_entities
        self.weights = weights or EdgeWeights()
        self.damping = float(damping)
        self.tol = tol
        self.max_iter = check_positive_int(max_iter, "max_iter")
        self._transition: Transition | None = None

    @property
    def transition(self) -> Transition:
        """The walk's transition matrix (built on first use)."""
        if self._transition is None:
            self._transition = transition_matrix(self.graph.adjacency(self.weights))
        return self._transition

    def query_entities(self, text: str) -> list[str]:
        """The query's entities that are nodes of the graph."""
        index = self.graph.entity_index
        return [name for name in self.extractor.extract([text])[0] if name in index]

    def seed_vector(
        self, query_text: str, seed_candidates: Sequence[Candidate] = ()
    ) -> tuple[np.ndarray, list[str]]:
        """Seed weights over all nodes (all zero when there is no seed) and the query entities.

        The first ``seed_top_n`` of ``seed_candidates`` seed passages, weighted by
        ``max(score, 0)``; their ids must be passages of the graph.
        """
        graph = self.graph
        entities = self.query_entities(query_text) if self.use_entities else []
        entity_part = np.zeros(graph.n_nodes)
        for name in entities:
            j = graph.entity_index[name]
            entity_part[graph.n_passages + j] += 1.0 / max(int(graph.entity_frequency[j]), 1)
        passage_part = np.zeros(graph.n_nodes)
        for candidate in list(seed_candidates)[: self.seed_top_n]:
            if candidate.id not in graph.passage_index:
                raise ValueError(
                    f"seed passage {candidate.id!r} is not a passage of the graph; seeds must "
                    "come from the corpus the graph was built from"
                )
            passage_part[graph.passage_index[candidate.id]] += max(float(candidate.score), 0.0)
        entity_mass, passage_mass = entity_part.sum(), passage_part.sum()
        if entity_mass > 0 and passage_mass > 0:
            seeds = (
                self.entity_share * entity_part / entity_mass
                + (1.0 - self.entity_share) * passage_part / passage_mass
            )
        elif entity_mass > 0 or passage_mass > 0:
            seeds = (entity_part + passage_part) / (entity_mass + passage_mass)
        else:
            seeds = entity_part  # all zero: no seed
        return seeds, entities

    def rank(
        self, query: Query, seed_candidates: Sequence[Candidate] = (), k: int = 10
    ) -> list[Candidate]:
        """The ``k`` best passages by PPR from the query's entities and ``seed_candidates``."""
        check_positive_int(k, "k")
        seeds, _ = self.seed_vector(query.text, seed_candidates)
        if not seeds.any():
            logger.warning(
                "no seed for query %r: no query entity is in the graph and no seed passage; "
                "returning no candidates",
                query.text,
            )
            return []
        result = personalized_pagerank(
            self.transition, seeds, damping=self.damping, tol=self.tol, max_iter=self.max_iter
        )
        scores = result.scores[: self.graph.n_passages]
        return rank_candidates(
            Candidate(self.corpus[i], float(scores[i]), signals={"graph": float(scores[i])})
            for i in _top_positive(scores, k)
        )

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        check_positive_int(k, "k")
        seeds = (
            self.seed_retriever.retrieve(query, k=self.seed_top_n)
            if self.seed_retriever is not None
            else []
        )
        return self.rank(query, seeds, k)


def _top_positive(scores: np.ndarray, k: int) -> Sequence[int]:
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:
        positive = positive[np.argpartition(-scores[positive], k - 1)[:k]]
    return positive[np.argsort(-scores[positive], kind="stable")].tolist()
