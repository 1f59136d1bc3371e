"""One LLM-free multi-hop retriever: the best pair for ranks 1-2, links and the graph after.

For a question q (:meth:`MultiHopRetriever.run`):

1. **Candidates**: the dense top-``candidates`` plus every passage whose title q names
   (:class:`~rag_multihop.multihop.titles.TitleIndex`). Each has ``base = cos(q, c) +
   named(c) + lexical_weight · lexical(c)`` (named = 1 when q names its title; lexical: its
   BM25 score over the query's best, which finds the names a question spells in chunks and
   files whose titles do not name them).
2. **Pair** (ranks 1-2): each of the ``first_hops`` best candidates by ``base`` is tried as
   the first hop ``a``; its title links (:class:`~rag_multihop.multihop.links.LinkGraph`)
   join the candidates; every partner ``c`` is scored
   ``base(a) + named(c) + residual(c | a) + link(a → c)``
   (:func:`~rag_multihop.multihop.scoring.pair_matrix`): a comparison question names both
   passages, a bridge question names ``a`` and ``a`` names ``c``; the residual cosine
   prefers the partner that answers the rest of the question over pages merely like ``a``;
   two referents of one question mention never both count as named. When q asks a
   relation of a name (*X's father*, *the director of film X*;
   :func:`~rag_multihop.multihop.relations.asked_relations`), no link counts toward X's
   passage: the answer is what X's passage names, and a passage naming X (X's son) is
   only its neighbour.
3. **Fill** (ranks 3+): greedily, the candidate with the highest ``base`` plus its best link
   from an already chosen passage; a chosen passage's links join the candidates, so chains
   continue hop by hop.
   **Second hops**: each pair passage q names (both in a comparison, *which film's
   director was born first, A or B?*; the first hop in a bridge question) puts its first
   linked passage in the fill besides the pair right after the pair (signal
   ``second_hop``), ahead of the tail's fusion: both compared subjects' second hops (each
   film's director) stay in the top 5 wherever the walk ranks them.
4. **Graph tail**: the fill's ranks 3+ are fused with Personalized PageRank over the entity
   graph (:class:`~rag_multihop.graph.retriever.GraphRetriever`) seeded by the pair and the
   question's entities (PIT calibration, Boltzmann fusion, graph pool capped at
   ``graph_cap``), which reaches passages that share entities rather than titles. With
   the tail guard, when a pair passage is known by subjects read from its text (its
   title, an opaque id or a document name, is not its name, so the entity graph could
   not link it) and the walk reaches no passage with
   :data:`~rag_multihop.multihop.scoring.MIN_WALK_MASS` of its mass, the tail keeps the
   fill's order: PIT gives such a diffuse walk's first passages full marks however
   little mass they hold, and they pushed the fill's linked second hops (each compared
   film's director) out of the top 5.
5. **Tail guard**: a tail rank keeps its passage only when the question or the pair supports
   it: named by the question, among the first stage's best ``fill_depth`` (by ``base``),
   linked from a pair passage *and* similar to the question (cosine above 0: a link counts
   only when the question supports the page beyond its name), or holding at least
   :data:`~rag_multihop.multihop.scoring.MIN_WALK_MASS` of the walk. Every other rank goes
   to the first stage's next passage (signal ``first_stage``), so an unrelated page a pair
   passage names, or a hub the walk drifts to, never pushes the question's best matches out.

**Candidates from your store**: with ``first_stage=`` any core
:class:`~rag_multihop.protocols.Retriever` (a FAISS/Chroma/Qdrant/... store wrapped by an
adapter, or the framework's retriever) supplies step 1's dense candidates instead of the
embedded FAISS search, and ``run(query, k, candidates=...)`` takes them already retrieved (a
pipeline's embedding retriever). Their cosines are computed from the passage vectors here, so
with the same candidates the rankings equal the embedded search's; ids the store returns but
the corpus lacks (a stale store) are skipped and counted in
:attr:`MultiHopTrace.stale_candidates`. Without a first stage the embedded index is built with
``ann`` (``"auto"``: exact below 50k passages, HNSW beyond; :mod:`rag_multihop.index.ann`).

``run(query, k, allowed=ids)`` restricts every step to the passages in ``allowed`` (e.g. those
matching a metadata filter): the dense candidates are the best allowed ones, named titles,
links and the graph walk reach only allowed passages, and the trace names no other.

No LLM and no labels; the only vector operations are the query's FAISS search and dot
products with stored passage vectors (nothing is encoded at query time besides the query).

Scores: the pair scores :data:`PAIR_SCORE` (rank 1 then rank 2), the second hops
:data:`SECOND_HOP_SCORE`, the tail its fused score in (0, 1] (a rank the guard gave to the
first stage keeps the rank's score). Signals: ``dense`` (cosine), ``named`` (1.0 when q
names the title), ``link`` (the link evidence that placed it), ``lexical`` (the scaled BM25
score), ``pair`` (the pair's score) and ``first_hop`` on the pair, ``second_hop`` on the
second hops, on the tail ``fill``/``graph`` with their calibrated values and ``fused``, and
``first_stage`` where the first stage's order was kept.

Example (a toy encoder stands in for MiniLM):
    >>> import numpy as np
    >>> from rag_multihop import Corpus, Passage, Query
    >>> class Words:
    ...     name, dim = "words", 4
    ...     def encode(self, texts, *, show_progress=False):
    ...         keys = ("film", "director", "born", "city")
    ...         v = np.array([[t.lower().count(w) + 0.01 for w in keys] for t in texts], "float32")
    ...         return v / np.linalg.norm(v, axis=1, keepdims=True)
    >>> corpus = Corpus([
    ...     Passage("f", "Polish Wedding is a film by Theresa Connelly.", "Polish Wedding"),
    ...     Passage("d", "Theresa Connelly is a director born in a city.", "Theresa Connelly"),
    ...     Passage("x", "A city is big.", "City")])
    >>> retriever = MultiHopRetriever.from_corpus(corpus, Words())
    >>> result = retriever.run(Query("Where was the director of Polish Wedding born?"), k=3)
    >>> [c.id for c in result.candidates], result.trace.pair
    (['f', 'd', 'x'], ('f', 'd'))
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag_multihop._settings import resolve_settings
from rag_multihop.corpus import Corpus, as_corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.fusion.core import FusionSettings, fuse_candidates
from rag_multihop.graph.build import EntityGraph
from rag_multihop.index.ann import DEFAULT_EF_SEARCH, check_ann, check_ef_search
from rag_multihop.index.dense import DenseIndex
from rag_multihop.multihop.build import build_structures, shared_entities, tail_walker
from rag_multihop.multihop.links import LinkGraph, stems
from rag_multihop.multihop.qualifiers import narrowed
from rag_multihop.multihop.relations import asked_relations
from rag_multihop.multihop.scoring import (
    MIN_WALK_MASS,
    best_pair,
    guarded_order,
    lexical_evidence,
    link_scores,
    pair_matrix,
    residual_cosine,
)
from rag_multihop.multihop.settings import MultiHopSettings
from rag_multihop.multihop.titles import TextMentions, TitleIndex
from rag_multihop.protocols import Retriever
from rag_multihop.store.encoder_check import check_index_encoder
from rag_multihop.tracing import span
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import (
    as_embedding_matrix,
    check_candidates,
    check_positive_int,
    check_query,
    l2_normalize,
)
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.store.methods import IndexSource

logger = logging.getLogger(__name__)

PAIR_SCORE = 2.0
"""Score of the two pair passages (above every tail score in (0, 1])."""

SECOND_HOP_SCORE = 1.0
"""Score of a pair passage's second hop placed right after the pair (``second_hops``; the
tail's best score)."""


class LexicalScorer(Protocol):
    """A word-for-word scorer of every passage, in corpus order (e.g.
    :class:`~rag_multihop.index.bm25.BM25Retriever`)."""

    def scores(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class MultiHopTrace:
    """What one query did."""

    query_id: str
    mentions: tuple[tuple[str, tuple[str, ...]], ...]
    first_hops: tuple[str, ...]
    pair: tuple[str, ...]
    pair_score: float
    candidates: int
    seconds: float
    kept_first_stage: bool = False
    """Nothing but similarity supported the pair, so ranks 1-2 kept the first stage's order."""
    stale_candidates: int = 0
    """First-stage candidates whose ids the corpus lacks (a store ahead of or behind it),
    skipped."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "query_id": self.query_id,
            "mentions": [[text, list(ids)] for text, ids in self.mentions],
            "first_hops": list(self.first_hops),
            "pair": list(self.pair),
            "pair_score": round(self.pair_score, 4),
            "candidates": self.candidates,
            "seconds": round(self.seconds, 5),
            "kept_first_stage": self.kept_first_stage,
            "stale_candidates": self.stale_candidates,
        }


@dataclass(frozen=True)
class MultiHopResult:
    """The ranked candidates of one query and its :class:`MultiHopTrace`."""

    candidates: list[Candidate]
    trace: MultiHopTrace

    @classmethod
    def empty(cls, query: Query) -> MultiHopResult:
        """No candidates: the answer of an adapter whose store or index holds no passages
        yet (an app that starts before its first ingestion).

        >>> MultiHopResult.empty(Query("Who?", id="q1")).trace.to_dict()["candidates"]
        0
        """
        trace = MultiHopTrace(query.id, (), (), (), 0.0, 0, 0.0)
        return cls([], trace)


class _Pool:
    """The candidates of one query: corpus rows, cosines, name flags; grows as links add rows
    (only rows in ``allowed`` when given). ``link_evidence`` keeps what
    :meth:`MultiHopRetriever._link_evidence` found, by source row and entity flag."""

    def __init__(
        self,
        vectors: np.ndarray,
        query: np.ndarray,
        named: dict[int, int],
        allowed: frozenset[int] | None = None,
        lexical: np.ndarray | None = None,
        lexical_weight: float = 0.0,
    ) -> None:
        self._vectors = vectors
        self._query = query
        self._named = named
        self.allowed = allowed
        self.lexical = lexical
        self._lexical_weight = lexical_weight
        self.rows: list[int] = []
        self.position: dict[int, int] = {}
        self.link_evidence: dict[tuple[int, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._cos = np.zeros(64)
        self._mention = np.full(64, -1, dtype=np.int64)

    def add(self, rows: Sequence[int], cos: Sequence[float] | None = None) -> None:
        """Add the allowed ``rows`` not yet in the pool (their cosines computed unless given)."""
        position, allowed = self.position, self.allowed
        new = [
            r
            for r in dict.fromkeys(rows)
            if r not in position and (allowed is None or r in allowed)
        ]
        if not new:
            return
        if cos is None:
            values = self._vectors[new] @ self._query
        else:
            by_row = dict(zip(rows, cos, strict=True))
            values = np.array([by_row[r] for r in new])
        start, end = len(self.rows), len(self.rows) + len(new)
        if end > len(self._cos):
            size = max(end, 2 * len(self._cos))
            self._cos = np.concatenate([self._cos, np.zeros(size - len(self._cos))])
            self._mention = np.concatenate(
                [self._mention, np.full(size - len(self._mention), -1, dtype=np.int64)]
            )
        self._cos[start:end] = values
        self._mention[start:end] = [self._named.get(r, -1) for r in new]
        position.update(zip(new, range(start, end), strict=True))
        self.rows.extend(new)

    def allows(self, row: int) -> bool:
        return self.allowed is None or row in self.allowed

    def signals(self, row: int, link_evidence: dict[int, float]) -> dict[str, float]:
        """``dense``, ``named`` and ``link`` of corpus ``row`` (empty when not pooled)."""
        position = self.position.get(row)
        if position is None:
            return {}
        signals = {
            "dense": float(self._cos[position]),
            "named": float(self._mention[position] >= 0),
            "link": link_evidence.get(position, 0.0),
        }
        if self.lexical is not None:
            signals["lexical"] = float(self.lexical[row])
        return signals

    @property
    def cos(self) -> np.ndarray:
        return self._cos[: len(self.rows)]

    @property
    def mention(self) -> np.ndarray:
        """Per candidate, the number of the question mention naming it (-1: not named)."""
        return self._mention[: len(self.rows)]

    @property
    def named(self) -> np.ndarray:
        return (self.mention >= 0).astype(np.float64)

    @property
    def base(self) -> np.ndarray:
        """Similarity + name (+ the weighted lexical evidence when there is any)."""
        if self.lexical is None:
            return self.cos + self.named
        return self.cos + self.named + self._lexical_weight * self.lexical[self.rows]

    def __len__(self) -> int:
        return len(self.rows)


def _ranked(candidates: list[Candidate]) -> list[Candidate]:
    """``candidates`` scored by rank in (0, 1] (the first 1.0)."""
    n = max(len(candidates), 1)
    return [c.with_score((n - i) / n) for i, c in enumerate(candidates)]


def _named_once(mention: np.ndarray, positions: Sequence[int]) -> list[int]:
    """The ``positions`` a question mention names (``mention`` >= 0), the first of each
    mention only.

    >>> _named_once(np.array([0, -1, 0, 1]), [0, 1, 2, 3])
    [0, 3]
    """
    seen: set[int] = set()
    named = []
    for position in positions:
        number = int(mention[position])
        if number >= 0 and number not in seen:
            seen.add(number)
            named.append(position)
    return named


def _grown(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` padded with zeros to ``size`` (itself when long enough)."""
    return values if len(values) >= size else np.concatenate([values, np.zeros(size - len(values))])


class MultiHopRetriever:
    """The multi-hop retriever (see the module docstring).

    Args:
        corpus: the passages.
        vectors: one embedding per passage, in corpus order (normalised here).
        index: a FAISS index over the same passages (built from ``vectors`` with ``ann``
            when ``None`` and there is no ``first_stage``).
        first_stage: a retriever whose candidates replace the embedded dense search (the
            module docstring); no FAISS index is built then.
        ann: the embedded index's type, ``"auto"`` (flat below 50k passages, ``"HNSW32"``
            beyond), ``"flat"`` or a FAISS factory string; ``ef_search``: HNSW's search
            breadth.
        encoder: embeds queries that carry no embedding.
        graph: the entity graph (shared entities and the graph tail; built when needed and
            ``None``).
        titles, links: the title index and link graph (built when ``None``).
        lexical: the word-for-word scorer of ``lexical_weight`` (BM25 over ``corpus``, built
            on the first query that needs it, when ``None``).
        settings: :class:`MultiHopSettings`; keyword overrides replace single fields
            (``None`` = keep the setting).
    """

    def __init__(
        self,
        corpus: Corpus | Sequence[Passage],
        vectors: np.ndarray,
        *,
        index: DenseIndex | None = None,
        first_stage: Retriever | None = None,
        ann: str = "auto",
        ef_search: int = DEFAULT_EF_SEARCH,
        encoder: Encoder | None = None,
        graph: EntityGraph | None = None,
        titles: TitleIndex | None = None,
        links: LinkGraph | None = None,
        settings: MultiHopSettings | None = None,
        candidates: int | None = None,
        first_hops: int | None = None,
        pair: bool | None = None,
        keep_first_stage: bool | None = None,
        title_links: bool | None = None,
        subjects: bool | None = None,
        residual: bool | None = None,
        specificity: bool | None = None,
        exclusive_mentions: bool | None = None,
        entity_weight: float | None = None,
        entity_max_passages: int | None = None,
        context_weight: float | None = None,
        context_window: int | None = None,
        fill_depth: int | None = None,
        graph_tail: bool | None = None,
        graph_cap: int | None = None,
        graph_seed_passages: int | None = None,
        tail_calibration: str | None = None,
        tail_fusion: str | None = None,
        graph_entity_share: float | None = None,
        ppr: str | None = None,
        tail_guard: bool | None = None,
        second_hops: bool | None = None,
        asked_relations: bool | None = None,
        lexical_weight: float | None = None,
        lexical: LexicalScorer | None = None,
    ) -> None:
        self.settings = resolve_settings(
            MultiHopSettings,
            settings,
            candidates=candidates,
            first_hops=first_hops,
            pair=pair,
            keep_first_stage=keep_first_stage,
            title_links=title_links,
            subjects=subjects,
            residual=residual,
            specificity=specificity,
            exclusive_mentions=exclusive_mentions,
            entity_weight=entity_weight,
            entity_max_passages=entity_max_passages,
            context_weight=context_weight,
            context_window=context_window,
            fill_depth=fill_depth,
            graph_tail=graph_tail,
            graph_cap=graph_cap,
            graph_seed_passages=graph_seed_passages,
            tail_calibration=tail_calibration,
            tail_fusion=tail_fusion,
            graph_entity_share=graph_entity_share,
            ppr=ppr,
            tail_guard=tail_guard,
            second_hops=second_hops,
            asked_relations=asked_relations,
            lexical_weight=lexical_weight,
        )
        corpus = as_corpus(corpus)
        matrix = as_embedding_matrix(vectors, name="passage vectors", ids=corpus.ids)
        if matrix.shape[0] != len(corpus):
            raise ValueError(f"got {matrix.shape[0]} vectors for {len(corpus)} passages")
        self.corpus = corpus
        self.vectors = l2_normalize(matrix)
        check_ann(ann)
        check_ef_search(ef_search)
        self.first_stage = _check_first_stage(first_stage)
        if index is None and first_stage is None:
            index = DenseIndex.build(corpus.ids, self.vectors, factory=ann, ef_search=ef_search)
        self.index = index
        self._ids: Sequence[str] = corpus.ids
        self._row: Mapping[str, int] = {pid: i for i, pid in enumerate(self._ids)}
        if index is not None:
            if len(index) != len(corpus) or index.dim != self.vectors.shape[1]:
                raise ValueError(
                    f"index holds {len(index)} vectors of dimension {index.dim}, expected "
                    f"{len(corpus)} of dimension {self.vectors.shape[1]}"
                )
            unknown = [pid for pid in index.ids[:1000] if pid not in self._row]
            if unknown:
                raise ValueError(f"the index holds ids not in the corpus, e.g. {unknown[:3]}")
        # an index in the corpus's order answers with rows, no ids looked up (_dense)
        self._index_in_row_order = index is not None and list(index.ids) == list(self._ids)
        self.encoder = encoder
        self._lexical = lexical
        self._queries = PassageVectors(encoder, dim=int(self.vectors.shape[1]))
        built = build_structures(corpus, self.settings, graph=graph, titles=titles, links=links)
        self.titles = built.titles
        self._read_subjects = frozenset(
            row
            for row, (passage, names) in enumerate(zip(corpus, built.names, strict=True))
            if names != (passage.title,)
        )
        self.links = built.links
        self.shared = built.shared
        self.graph_retriever = built.walker
        self._tail_fusion = FusionSettings(
            calibration=self.settings.tail_calibration, fusion=self.settings.tail_fusion
        )

    def _attach_graph(self, graph: EntityGraph | None, *, check_corpus: bool) -> None:
        """The shared-entity postings and the graph tail's retriever over ``graph``."""
        settings = self.settings
        self.shared = (
            shared_entities(graph, settings)
            if graph is not None and settings.entity_weight > 0
            else None
        )
        self.graph_retriever = (
            tail_walker(graph, self.corpus, settings, check_corpus=check_corpus)
            if graph is not None and settings.graph_tail
            else None
        )
        self._tail_fusion = FusionSettings(
            calibration=settings.tail_calibration, fusion=settings.tail_fusion
        )

    @classmethod
    def from_index(
        cls,
        snapshot: IndexSource,
        *,
        encoder: Encoder | None = None,
        first_stage: Retriever | None = None,
        settings: MultiHopSettings | None = None,
        candidates: int | None = None,
        first_hops: int | None = None,
        pair: bool | None = None,
        keep_first_stage: bool | None = None,
        title_links: bool | None = None,
        subjects: bool | None = None,
        residual: bool | None = None,
        specificity: bool | None = None,
        exclusive_mentions: bool | None = None,
        entity_weight: float | None = None,
        entity_max_passages: int | None = None,
        context_weight: float | None = None,
        context_window: int | None = None,
        fill_depth: int | None = None,
        graph_tail: bool | None = None,
        graph_cap: int | None = None,
        graph_seed_passages: int | None = None,
        tail_calibration: str | None = None,
        tail_fusion: str | None = None,
        graph_entity_share: float | None = None,
        ppr: str | None = None,
        tail_guard: bool | None = None,
        second_hops: bool | None = None,
        asked_relations: bool | None = None,
        lexical_weight: float | None = None,
        lexical: LexicalScorer | None = None,
    ) -> MultiHopRetriever:
        """The retriever over an opened index (:meth:`CorpusIndex.snapshot()
        <rag_multihop.store.CorpusIndex.snapshot>`), built from its stored structures
        without reading or re-extracting any text; its rankings equal those of
        ``MultiHopRetriever(corpus, vectors)`` over the same passages in the same order.
        ``settings``, ``first_stage``, ``lexical`` and the keywords as for the constructor
        (the index stores no BM25: without ``lexical`` it is built over the index's texts on
        the first query); ``subjects``
        and ``context_window`` must be the index's (its names and links were stored with
        them). ``snapshot`` may be a :class:`~rag_multihop.store.CorpusIndex` (its current
        version is read) or an index's path."""
        from rag_multihop.store.methods import as_snapshot

        snapshot = as_snapshot(snapshot)
        self = cls.__new__(cls)
        self.settings = resolve_settings(
            MultiHopSettings,
            settings,
            candidates=candidates,
            first_hops=first_hops,
            pair=pair,
            keep_first_stage=keep_first_stage,
            title_links=title_links,
            subjects=subjects,
            residual=residual,
            specificity=specificity,
            exclusive_mentions=exclusive_mentions,
            entity_weight=entity_weight,
            entity_max_passages=entity_max_passages,
            context_weight=context_weight,
            context_window=context_window,
            fill_depth=fill_depth,
            graph_tail=graph_tail,
            graph_cap=graph_cap,
            graph_seed_passages=graph_seed_passages,
            tail_calibration=tail_calibration,
            tail_fusion=tail_fusion,
            graph_entity_share=graph_entity_share,
            ppr=ppr,
            tail_guard=tail_guard,
            second_hops=second_hops,
            asked_relations=asked_relations,
            lexical_weight=lexical_weight,
        )
        if snapshot.n_live == 0:
            raise ValueError(f"the index at {snapshot.root} holds no passages")
        if self.settings.context_window != snapshot.settings.context_window:
            raise ValueError(
                f"context_window {self.settings.context_window} differs from the index's "
                f"{snapshot.settings.context_window} (its links were stored with that window)"
            )
        if self.settings.subjects != snapshot.settings.subjects:
            raise ValueError(
                f"subjects={self.settings.subjects} differs from the index's "
                f"subjects={snapshot.settings.subjects} (its names and links were stored "
                f"with it): pass subjects={snapshot.settings.subjects}, or rebuild the index "
                f"with IndexSettings(subjects={self.settings.subjects})"
            )
        if encoder is not None:
            check_index_encoder(snapshot.manifest, encoder, where=snapshot.root)
        self.corpus = snapshot.corpus
        self.vectors = snapshot.vectors
        self.first_stage = _check_first_stage(first_stage)
        self.index = snapshot.dense_index if first_stage is None else None
        self._index_in_row_order = self.index is not None  # its positions are the corpus's
        self._ids = snapshot.passage_ids
        self._row = snapshot.id_positions
        self.encoder = encoder
        self._lexical = lexical
        self._queries = PassageVectors(encoder, dim=int(self.vectors.shape[1]))
        self.titles = snapshot.title_index
        self._read_subjects = snapshot.subject_rows
        self.links = snapshot.link_graph
        s = self.settings
        self._attach_graph(
            snapshot.entity_graph if s.graph_tail or s.entity_weight > 0 else None,
            check_corpus=False,
        )
        return self

    @classmethod
    def from_corpus(
        cls,
        corpus: Corpus | Sequence[Passage],
        encoder: Encoder,
        *,
        settings: MultiHopSettings | None = None,
        show_progress: bool = False,
    ) -> MultiHopRetriever:
        """Embed every passage (``title + "\\n" + text``) and build everything else."""
        corpus = as_corpus(corpus)
        vectors = encoder.encode(corpus.texts(), show_progress=show_progress)
        return cls(corpus, vectors, encoder=encoder, settings=settings)

    # ------------------------------------------------------------------ steps

    def _question(self, text: str) -> tuple[TextMentions, dict[int, int], frozenset[str]]:
        """Mentions, named rows (-> mention number) and the stems outside the mentions."""
        found = self.titles.mentions(text, aliases_too=True)
        found = narrowed(found, text, lambda row: self.corpus[row].text)
        named: dict[int, int] = {}
        inside: set[int] = set()
        for number, mention in enumerate(found.mentions):
            inside.update(range(mention.start, mention.end))
            for row in mention.referents:
                named.setdefault(row, number)
        rest = [t for i, t in enumerate(found.tokens) if i not in inside]
        return found, named, stems(rest)

    def _link_evidence(
        self, pool: _Pool, source: int, question: frozenset[str], *, entities: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pool positions corpus row ``source`` leads to (added to the pool) and the evidence
        of each: its title links and, with ``entities``, the passages sharing an entity with
        it (``entity_weight`` × the entity's specificity), whichever is higher. Remembered
        per query (the pair and the tail guard ask about the same first hops)."""
        key = (source, entities)
        found = pool.link_evidence.get(key)
        if found is None:
            found = pool.link_evidence[key] = self._find_link_evidence(
                pool, source, question, entities=entities
            )
        return found

    def _find_link_evidence(
        self, pool: _Pool, source: int, question: frozenset[str], *, entities: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_link_evidence`, computed."""
        s = self.settings
        related = self.shared.related(source) if entities and self.shared is not None else {}
        if not s.title_links and not related:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        targets = self.links.targets(source) if s.title_links else {}
        pool.add(list(targets))
        rows = [t for t in targets if t in pool.position]
        positions = np.array([pool.position[t] for t in rows], dtype=np.int64)
        specificity = (
            self.links.specificity[rows] if self.settings.specificity else np.ones(len(rows))
        )
        overlaps = self.links.context_overlaps(source, rows, question)
        weights = np.array([targets[t] for t in rows], dtype=np.float64)
        scores = link_scores(weights, specificity, overlaps, s.context_weight)
        if not related:
            return positions, scores
        pool.add(list(related))
        evidence = dict(zip(positions.tolist(), scores.tolist(), strict=True))
        for row, value in related.items():
            position = pool.position.get(row)
            if position is None:
                continue
            evidence[position] = max(evidence.get(position, 0.0), s.entity_weight * value)
        return np.fromiter(evidence, dtype=np.int64), np.fromiter(evidence.values(), np.float64)

    def _pair(
        self, pool: _Pool, question: frozenset[str], asked: frozenset[int]
    ) -> tuple[list[int], list[int], float, bool]:
        """The pair's pool positions (rank order), the first hops tried, the pair score and
        whether a name or a title link supports it (a passage the question names, a title
        link from the first hop to its partner); shared entities alone do not. No link
        counts toward a referent of the mentions in ``asked`` (the question asks a
        relation of them, :func:`~rag_multihop.multihop.relations.asked_relations`)."""
        s = self.settings
        firsts = [int(i) for i in np.argsort(-pool.base, kind="stable")[: s.first_hops]]
        first_rows = [pool.rows[i] for i in firsts]
        evidence_rows = [
            self._link_evidence(pool, row, question, entities=True) for row in first_rows
        ]
        links = np.zeros((len(firsts), len(pool)))
        for i, (positions, scores) in enumerate(evidence_rows):
            links[i, positions] = scores
        if asked:
            # what a question asks of a named subject is what the subject's passage names;
            # a passage naming the subject is its neighbour (:mod:`.relations`)
            links[:, np.isin(pool.mention, list(asked))] = 0.0
        cos = pool.cos
        if s.residual:
            passage = self.vectors[pool.rows]
            evidence = np.stack(
                [
                    residual_cosine(cos, float(cos[i]), passage @ self.vectors[row])
                    for i, row in zip(firsts, first_rows, strict=True)
                ]
            )
        else:
            evidence = np.tile(cos, (len(firsts), 1))
        mention = pool.mention
        same = (mention[None, :] >= 0) & (mention[firsts][:, None] == mention[None, :])
        if not s.exclusive_mentions:
            same = np.zeros_like(same)
        base = pool.base
        scores = pair_matrix(base[firsts], pool.named, evidence, links, same)
        i, j, score = best_pair(scores, firsts)
        if s.residual and not pool.named[j] and not self._title_linked(first_rows[i], pool, j):
            # only its residual picked this partner (the question does not name it, the
            # first hop does not link it): the first stage's similarity picks it instead
            plain = pair_matrix(
                base[firsts[i : i + 1]], pool.named, cos[None, :], links[i : i + 1], same[i : i + 1]
            )
            _, j, score = best_pair(plain, firsts[i : i + 1])
        a = firsts[i]
        order = [a, j] if base[a] >= base[j] else [j, a]
        linked = self._title_linked(first_rows[i], pool, j)
        supported = bool(pool.named[a] or pool.named[j] or linked)
        return order, firsts, score, supported

    def _title_linked(self, first_row: int, pool: _Pool, partner: int) -> bool:
        """Whether a title link (when used) leads from ``first_row`` to the pool's
        ``partner``."""
        return self.settings.title_links and pool.rows[partner] in self.links.targets(first_row)

    def _fill(
        self, pool: _Pool, chosen: list[int], question: frozenset[str], depth: int
    ) -> tuple[list[int], dict[int, float]]:
        """``chosen`` extended greedily to ``depth`` positions; the link evidence of each."""
        bonus = np.zeros(len(pool))
        evidence: dict[int, float] = {}
        order: list[int] = []
        for position in chosen:
            evidence[position] = float(bonus[position])
            order.append(position)
            positions, scores = self._link_evidence(pool, pool.rows[position], question)
            bonus = _grown(bonus, len(pool))
            np.maximum.at(bonus, positions, scores)
        while len(order) < min(depth, len(pool)):
            score = pool.base + bonus
            score[order] = -np.inf
            best = int(np.argmax(score))
            evidence[best] = float(bonus[best])
            order.append(best)
            positions, scores = self._link_evidence(pool, pool.rows[best], question)
            bonus = _grown(bonus, len(pool))
            np.maximum.at(bonus, positions, scores)
        return order, evidence

    def _tail(
        self, query: Query, pool: _Pool, order: list[int], k: int, reserved: int
    ) -> list[Candidate]:
        """Ranks ``reserved + 1``.. of ``order`` fused with the graph walk seeded by its first
        two (without the pool's signals, which :meth:`run` adds by row)."""
        seeds_rows = [pool.rows[i] for i in order[:2]]
        pair = seeds_rows[:reserved]
        head = [pool.rows[i] for i in order[:reserved]]
        rest = [pool.rows[i] for i in order[reserved:]]
        fill = [
            Candidate(
                self.corpus[row], float(len(rest) - i), signals={"fill": float(len(rest) - i)}
            )
            for i, row in enumerate(rest)
        ]
        if self.graph_retriever is None or not seeds_rows:
            return _ranked(fill)[: max(k - reserved, 0)]
        seeds = [Candidate(self.corpus[row], 1.0) for row in seeds_rows]
        depth = self.settings.graph_cap + len(head) if pool.allowed is None else len(self._ids)
        walked = self.graph_retriever.rank(query, seeds, k=depth)
        skip = {self._ids[row] for row in head}
        walk = [c for c in walked if c.id not in skip and pool.allows(self._row[c.id])]
        if not walk or (self._diffuse(walk) and not self._read_subjects.isdisjoint(pair)):
            return _ranked(fill)[: max(k - reserved, 0)]
        return fuse_candidates(
            {"fill": fill, "graph": walk[: self.settings.graph_cap]},
            self._tail_fusion,
            top_n=max(k - reserved, 0),
        )

    def _second_hops(self, pool: _Pool, pair: list[int], order: list[int]) -> list[int]:
        """With ``second_hops``: for each pair passage the question names (a comparison names
        both, a bridge question its first hop; two referents of one mention count once), its
        first title-linked passage in the fill's ``order`` besides the pair that the question
        supports (cosine above 0, the tail guard's link test), in pool positions and pair
        order; :meth:`run` places them right after the pair."""
        if not self.settings.second_hops:
            return []
        cos = pool.cos
        hops: list[int] = []
        for source in _named_once(pool.mention, pair):
            targets = self.links.targets(pool.rows[source])
            hop = next(
                (
                    i
                    for i in order[len(pair) :]
                    if pool.rows[i] in targets and cos[i] > 0 and i not in hops
                ),
                None,
            )
            if hop is not None:
                hops.append(hop)
        return hops

    def _diffuse(self, walk: list[Candidate]) -> bool:
        """With the tail guard: the walk reaches no passage with
        :data:`~rag_multihop.multihop.scoring.MIN_WALK_MASS` of its mass."""
        return self.settings.tail_guard and max(c.score for c in walk) < MIN_WALK_MASS

    # ------------------------------------------------------------------ public

    def _allowed_rows(self, allowed: Collection[str] | None) -> frozenset[int] | None:
        """The corpus rows of ``allowed`` (``None``: every row); unknown ids are an error."""
        if allowed is None:
            return None
        if isinstance(allowed, str) or not isinstance(allowed, Collection):
            raise TypeError(
                f"allowed must be a collection of passage ids (a set or list), got "
                f"{type(allowed).__name__}"
            )
        unknown = [pid for pid in allowed if pid not in self._row]
        if unknown:
            raise ValueError(
                f"allowed holds {len(unknown)} ids that are not in the corpus, e.g. {unknown[:3]}"
            )
        return frozenset(self._row[pid] for pid in allowed)

    def _dense(
        self, vector: np.ndarray, allowed: frozenset[int] | None
    ) -> tuple[list[int], list[float]]:
        """The rows and cosines of the ``candidates`` nearest allowed passages."""
        limit = self.settings.candidates
        if allowed is None and self.index is not None:
            if self._index_in_row_order:
                scores, positions = self.index.search_positions(vector[None, :], limit)
                return positions[0].tolist(), scores[0].tolist()
            scores, ids = self.index.search(vector[None, :], limit)
            return [self._row[i] for i in ids[0]], [float(x) for x in scores[0]]
        rows = (
            np.arange(len(self._ids), dtype=np.int64)
            if allowed is None
            else np.fromiter(sorted(allowed), dtype=np.int64, count=len(allowed))
        )
        cos = self.vectors[rows] @ vector
        best = np.argsort(-cos, kind="stable")[:limit]
        return rows[best].tolist(), cos[best].tolist()

    def _given(
        self, found: Sequence[Candidate], vector: np.ndarray, allowed: frozenset[int] | None
    ) -> tuple[list[int], list[float], int]:
        """The first ``candidates`` known, allowed rows of a first stage's ``found``, by
        cosine (computed here), and how many of its ids the corpus lacks."""
        rows: list[int] = []
        stale = 0
        for candidate in found:
            row = self._row.get(candidate.id)
            if row is None:
                stale += 1
            elif allowed is None or row in allowed:
                rows.append(row)
        rows = list(dict.fromkeys(rows))[: self.settings.candidates]
        cos = self.vectors[rows] @ vector if rows else np.zeros(0)
        order = np.argsort(-cos, kind="stable")
        return [rows[i] for i in order], cos[order].tolist(), stale

    def run(
        self,
        query: Query,
        k: int = 10,
        *,
        allowed: Collection[str] | None = None,
        candidates: Sequence[Candidate] | None = None,
    ) -> MultiHopResult:
        """The ``k`` best candidates for ``query`` and the :class:`MultiHopTrace`; with
        ``allowed`` (passage ids), only those passages (none: an empty result); with
        ``candidates``, those are the first stage (e.g. a pipeline's embedding retriever's
        documents) instead of a search."""
        with span("multihop.run", k=k) as record:
            result = self._run(query, k, allowed, candidates)
            trace = result.trace
            record.set(pool_size=trace.candidates, returned=len(result.candidates))
        return result

    def _run(
        self,
        query: Query,
        k: int,
        allowed: Collection[str] | None,
        candidates: Sequence[Candidate] | None,
    ) -> MultiHopResult:
        start = time.perf_counter()
        k = check_positive_int(k, "k")
        query = check_query(query)
        if candidates is not None:
            candidates = check_candidates(candidates)
        s = self.settings
        rows_allowed = self._allowed_rows(allowed)
        stale = 0
        with span("multihop.first_stage") as stage:
            vector = self._queries.query(query)
            found, named, question = self._question(query.text)
            pool = _Pool(
                self.vectors,
                vector,
                named,
                rows_allowed,
                lexical=self._lexical_scores(query.text),
                lexical_weight=s.lexical_weight,
            )
            if candidates is None and self.first_stage is not None:
                candidates = self.first_stage.retrieve(query, k=s.candidates)
            if candidates is None:
                dense_rows, dense_cos = self._dense(vector, rows_allowed)
            else:
                dense_rows, dense_cos, stale = self._given(candidates, vector, rows_allowed)
                if stale:
                    logger.debug("%d first-stage candidates are not in the corpus", stale)
            pool.add(dense_rows, dense_cos)
            pool.add(sorted(named))
            stage.set(
                candidates=len(dense_rows),
                mentions=len(found.mentions),
                named=len(named),
                pool_size=len(pool),
                stale_candidates=stale,
            )
        pair_score = 0.0
        firsts: list[int] = []
        kept_first_stage = False
        chosen: list[int]
        if len(pool) == 0:
            chosen = []
        elif s.pair and len(pool) >= 2:
            with span("multihop.pair", first_hops=min(s.first_hops, len(pool))) as stage:
                asked = asked_relations(found) if s.asked_relations else frozenset()
                chosen, firsts, pair_score, supported = self._pair(pool, question, asked)
                kept_first_stage = s.keep_first_stage and not supported
                stage.set(
                    pool_size=len(pool),
                    pair_score=float(pair_score),
                    supported=supported,
                    kept_first_stage=kept_first_stage,
                )
        if len(pool) and (not s.pair or len(pool) < 2 or kept_first_stage):
            chosen = [int(np.argmax(pool.base))]
        depth = max(k, s.fill_depth)
        with span("multihop.fill", depth=depth) as stage:
            order, link_evidence = self._fill(pool, chosen, question, depth)
            stage.set(filled=len(order), pool_size=len(pool))
        out: list[Candidate] = []
        head = order[:2]
        for rank, position in enumerate(head, start=1):
            row = pool.rows[position]
            signals = self._signals(pool, row, link_evidence)
            if kept_first_stage:
                signals["first_stage"] = 1.0
            else:
                signals |= {"pair": pair_score, "first_hop": float(rank == 1)}
            out.append(Candidate(self.corpus[row], PAIR_SCORE, rank, signals))
        hops = self._second_hops(pool, head, order) if s.pair and not kept_first_stage else []
        order = head + hops + [i for i in order[len(head) :] if i not in hops]
        for position in hops:
            row = pool.rows[position]
            signals = self._signals(pool, row, link_evidence) | {"second_hop": 1.0}
            out.append(Candidate(self.corpus[row], SECOND_HOP_SCORE, len(out) + 1, signals))
        fused = self.graph_retriever is not None and bool(order)
        with span("multihop.graph_tail", graph=fused) as stage:
            tail = self._tail(query, pool, order, k, len(head) + len(hops))
            if s.tail_guard:
                tail = self._guard(
                    pool,
                    [pool.rows[i] for i in head],
                    tail,
                    question,
                    placed=[pool.rows[i] for i in hops],
                )
            stage.set(returned=len(tail))
        for candidate in tail:
            signals = self._signals(pool, self._row[candidate.id], link_evidence)
            signals |= candidate.signals
            if fused and "first_stage" not in candidate.signals:
                signals["fused"] = candidate.score
            out.append(Candidate(candidate.passage, candidate.score, len(out) + 1, signals))
        trace = MultiHopTrace(
            query_id=query.id,
            mentions=tuple(
                (m.text, tuple(self._ids[r] for r in m.referents if pool.allows(r)))
                for m in found.mentions
            ),
            first_hops=tuple(self._ids[pool.rows[i]] for i in firsts),
            pair=tuple(self._ids[pool.rows[i]] for i in head),
            pair_score=pair_score,
            candidates=len(pool),
            seconds=time.perf_counter() - start,
            kept_first_stage=kept_first_stage,
            stale_candidates=stale,
        )
        return MultiHopResult(out[:k], trace)

    def _lexical_scores(self, text: str) -> np.ndarray | None:
        """:func:`lexical_evidence` of every passage for ``text`` (``None`` when
        ``lexical_weight`` is 0); the BM25 index is built on first use unless given."""
        if self.settings.lexical_weight == 0:
            return None
        if self._lexical is None:
            from rag_multihop.index.bm25 import BM25Retriever

            self._lexical = BM25Retriever(self.corpus)
        scores = np.asarray(self._lexical.scores(text), dtype=np.float64)
        if scores.shape != (len(self._ids),):
            raise ValueError(
                f"the lexical scorer gave {scores.shape[0]} scores for {len(self._ids)} passages"
            )
        return lexical_evidence(scores)

    def _guard(
        self,
        pool: _Pool,
        head: list[int],
        tail: list[Candidate],
        question: frozenset[str],
        placed: Sequence[int] = (),
    ) -> list[Candidate]:
        """``tail`` with every rank that neither the question nor the pair supports given to
        the first stage's next passage (signal ``first_stage``); scores stay those of the
        ranks (see ``tail_guard`` in :class:`MultiHopSettings`)."""
        first_stage = [pool.rows[i] for i in np.argsort(-pool.base, kind="stable")]
        supported = set(first_stage[: self.settings.fill_depth])
        supported.update(pool.rows[i] for i in np.flatnonzero(pool.mention >= 0))
        for row in head:
            positions, scores = self._link_evidence(pool, row, question, entities=True)
            cos = pool.cos
            supported.update(
                pool.rows[p]
                for p, v in zip(positions.tolist(), scores.tolist(), strict=True)
                if v > 0 and cos[p] > 0
            )
        walked = {self._row[c.id] for c in tail if c.signals.get("graph", 0.0) >= MIN_WALK_MASS}
        supported |= walked
        rows = [self._row[c.id] for c in tail]
        fallback = [row for row in first_stage if row not in head and row not in placed]
        by_row = {self._row[c.id]: c for c in tail}
        out = []
        for (row, filled), slot in zip(
            guarded_order(rows, supported, fallback, len(tail)), tail, strict=False
        ):
            if filled:
                out.append(Candidate(self.corpus[row], slot.score, signals={"first_stage": 1.0}))
            else:
                out.append(by_row[row].with_score(slot.score))
        return out

    def _signals(self, pool: _Pool, row: int, link_evidence: dict[int, float]) -> dict[str, float]:
        """The pool's signals of ``row``, and ``subject`` (1.0) when the question names it by a
        subject read from its text."""
        signals = pool.signals(row, link_evidence)
        if signals.get("named") and row in self._read_subjects:
            signals["subject"] = 1.0
        return signals

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The core ``Retriever`` protocol: :meth:`run` without the trace."""
        return self.run(query, k).candidates

    async def arun(
        self,
        query: Query,
        k: int = 10,
        *,
        allowed: Collection[str] | None = None,
        candidates: Sequence[Candidate] | None = None,
    ) -> MultiHopResult:
        """The async twin of :meth:`run`: the search and the walk run in a worker thread, off
        the event loop."""
        return await asyncio.to_thread(self.run, query, k, allowed=allowed, candidates=candidates)

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The async twin of :meth:`retrieve`."""
        return (await self.arun(query, k)).candidates


def _check_first_stage(first_stage: object) -> Retriever | None:
    """``first_stage`` if it is ``None`` or has ``retrieve(query, k)``, else ``TypeError``."""
    if first_stage is not None and not callable(getattr(first_stage, "retrieve", None)):
        raise TypeError(
            "first_stage must be a retriever with retrieve(query, k) -> candidates (e.g. "
            f"rag_multihop.index.DenseRetriever or an adapter's store), got "
            f"{type(first_stage).__name__}"
        )
    return first_stage  # type: ignore[return-value]
