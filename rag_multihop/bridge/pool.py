"""The candidate pool of the missing hop: the union of the expansion searches, capped.

BridgeRAG searches once per bridge entity (``entity_k`` = 5 each) and once per generated
query (``query_k`` = 5 each; three queries give up to 15), unions the results, drops the
bridge itself and keeps at most ``cap`` (20) candidates. The paper does not say which
candidates survive the cap; :func:`build_pool` keeps them **by best rank in any search**
(ranks counted without the bridge: every search's rank-1 hit first, then rank 2, ...; ties
by the higher search score, then by first appearance), so a long list from the queries
cannot crowd out the entities' hits. Search scores of different sources are not on one
scale (a two-word entity and a question score differently against the same passage),
which is why ranks decide.

Every pool candidate records its provenance in ``signals``: ``"retrieval"`` (its best
search score, the retrieval score that is fused with the judge), ``"search_queries"`` (its
best score over the query searches) and ``"search_e1"``, ``"search_e2"``, ... (its score in
each entity's search), present only for the searches that found it, and ``"pool_rank"``
(its best rank in any search). ``Candidate.score`` is the retrieval score.

Example:
    >>> from rag_multihop import Candidate, Passage
    >>> def hits(*scored):
    ...     return [Candidate(Passage(i, i), s, rank=r) for r, (i, s) in enumerate(scored, 1)]
    >>> pool = build_pool(
    ...     "b",
    ...     query_hits=[hits(("b", 0.9), ("x", 0.8)), hits(("y", 0.7), ("x", 0.85))],
    ...     entity_hits=[hits(("z", 0.5))],
    ...     cap=3,
    ... )
    >>> [(c.id, c.signals["pool_rank"]) for c in pool]
    [('x', 1.0), ('y', 1.0), ('z', 1.0)]
    >>> dict(pool[0].signals)
    {'search_queries': 0.85, 'retrieval': 0.85, 'pool_rank': 1.0}
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from rag_multihop.types import Candidate, Passage
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

DEFAULT_ENTITY_K = 5
DEFAULT_QUERY_K = 5
DEFAULT_POOL_CAP = 20


@dataclass
class _Entry:
    passage: Passage
    order: int
    best_rank: int
    retrieval: float
    signals: dict[str, float]


def build_pool(
    bridge_id: str | None,
    query_hits: Sequence[Sequence[Candidate]],
    entity_hits: Sequence[Sequence[Candidate]],
    *,
    cap: int = DEFAULT_POOL_CAP,
) -> list[Candidate]:
    """The deduplicated, capped pool of the expansion searches (see the module docstring).

    ``query_hits`` holds one ranked list per generated query, ``entity_hits`` one per bridge
    entity, in entity order (``search_e1`` is ``entity_hits[0]``). Candidates with id
    ``bridge_id`` are left out. Returns new candidates, best first, with 1-based ranks.
    """
    check_positive_int(cap, "cap")
    entries: dict[str, _Entry] = {}
    sources = [("search_queries", hits) for hits in query_hits] + [
        (f"search_e{i}", hits) for i, hits in enumerate(entity_hits, start=1)
    ]
    for source, hits in sources:
        others = [hit for hit in hits if hit.id != bridge_id]
        for position, hit in enumerate(others, start=1):
            entry = entries.get(hit.id)
            if entry is None:
                entry = _Entry(hit.passage, len(entries), position, hit.score, {})
                entries[hit.id] = entry
            entry.best_rank = min(entry.best_rank, position)
            entry.retrieval = max(entry.retrieval, hit.score)
            entry.signals[source] = max(entry.signals.get(source, hit.score), hit.score)
    ordered = sorted(entries.values(), key=lambda e: (e.best_rank, -e.retrieval, e.order))
    if len(ordered) > cap:
        logger.debug("pool of %d candidates capped at %d", len(ordered), cap)
    return [
        Candidate(
            e.passage,
            e.retrieval,
            rank,
            {**e.signals, "retrieval": e.retrieval, "pool_rank": float(e.best_rank)},
        )
        for rank, e in enumerate(ordered[:cap], start=1)
    ]
