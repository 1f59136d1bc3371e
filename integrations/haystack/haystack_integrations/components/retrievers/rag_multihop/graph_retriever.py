"""``EntityGraphRetriever``: rag-multihop's entity graph + Personalized PageRank as a component.

The graph covers every document of ``document_store`` (``filter_documents()``). It is built
in :meth:`EntityGraphRetriever.warm_up` (called by the pipeline, or on the first ``run``), or
loaded from ``graph_path`` when that folder holds a graph of exactly these documents; a
freshly built graph is saved there. Documents written to the store later are noticed: every
run compares the store's document count with the graph's and rebuilds the graph when they
differ; when the counts are equal it reads the store's documents and compares their ids,
content, meta and embeddings with the graph's (``convert.store_change``, the rule every
component of this package that caches a store's documents follows), so an overwrite or a
delete + add that keeps the count rebuilds it too. That second check costs one
``filter_documents()`` and one comparison per run: on the 6,119 passages of 2WikiMultihopQA in
an ``InMemoryDocumentStore`` (``scripts/graph_staleness_cost.py``, two runs on a loaded 2-core
machine) 1.7-3.8 ms (the store returns its stored documents: no text compared) against
10-21 ms for the run itself, and about 35 ms with ``return_embedding=False`` (Haystack copies
every document on each read). With a remote store it reads every document per run: there set
``auto_refresh=False`` (the count only, a warning once when it changed) and call
:meth:`refresh` after writing. A store that holds no documents yet (a pipeline warmed up
before the first ingestion) is fine: runs return no documents until some are written.
``filters`` decide which seed documents seed the walk and which documents come back (Haystack
filter syntax, checked when given, matched in memory by Haystack's own rule; the walk runs
over the whole graph); ``filter_policy`` says whether ``run(filters=...)`` replaces or merges
with the init filters, as for Haystack's own retrievers. A
saved graph of other documents is an error at warm-up: delete the folder to rebuild.
Synonym edges between entity names need ``embedder`` (the pipeline's own text or document
embedder, or a model name); without one the graph has none.

Inputs: ``query``, optional ``documents`` (seed documents, e.g. the output of an embedding
retriever over the same store: their top ``seed_top_n`` seed the walk next to the query's
entities, weighted by their scores; the walk drops a seed whose score is <= 0 or ``None``,
and a warning says so when every seed is such a one) and ``top_k``. Output: ``documents``,
the store's documents (``dataclasses.replace``, never mutated) with ``score`` = PPR mass and
the signals in ``meta["rag_multihop_signals"]``. Translation (the package's one rule):
``Document.id`` is the passage id, ``content`` the text, ``meta["title"]`` the title.

Example:
    >>> from haystack import Document
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> store = InMemoryDocumentStore()
    >>> _ = store.write_documents([
    ...     Document(id="a", content="Rope is a film by Alfred Hitchcock.", meta={"title": "Rope"}),
    ...     Document(id="b", content="Alfred Hitchcock was a director."),
    ... ])
    >>> retriever = EntityGraphRetriever(store, top_k=2)
    >>> [d.id for d in retriever.run(query="Who directed Rope?")["documents"]]
    ['a', 'b']
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack.utils.filters import document_matches_filter
from haystack_integrations.common.rag_multihop.convert import (
    as_encoder,
    as_filter_policy,
    candidate_to_document,
    check_embedder,
    check_filters,
    document_signals,
    documents_to_corpus,
    embedder_to_dict,
    store_change,
)

from rag_multihop.corpus import Corpus
from rag_multihop.graph import EntityGraph, GraphRetriever, GraphSettings, build_entity_graph
from rag_multihop.graph.build import DEFAULT_SYNONYM_THRESHOLD
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_fraction, check_positive_int

logger = logging.getLogger(__name__)


@component
class EntityGraphRetriever:
    """Personalized PageRank over the entity graph of a document store (module docstring).

    Args:
        document_store: any Haystack document store (its documents form the graph).
        top_k: documents returned (``> 0``); ``run(top_k=...)`` overrides it.
        seed_top_n: how many seed documents (``run(documents=...)``) seed the walk.
        entity_share: share of the seed mass on query entities when both kinds exist.
        use_entities: seed from the query's entities.
        damping: probability of another step of the walk, ``[0, 1)``.
            These four are :class:`rag_multihop.graph.GraphSettings` fields (defaults and
            checks are the core's); the component keeps them as :attr:`settings`.
        graph_path: folder to load the graph from, or to save a freshly built one to.
        show_progress: progress bar while building the graph.
        auto_refresh: rebuild the graph when the store's documents changed since it was
            built: another count, or (same count) another id, content or meta (checked on
            every run, see the module docstring for the cost); ``False`` checks the count
            only, warns once that the graph is stale and keeps it until :meth:`refresh`.
        filters: Haystack filters the seed and returned documents must match.
        filter_policy: how ``run(filters=...)`` combines with ``filters``: ``REPLACE``
            (default) or ``MERGE`` (Haystack's ``FilterPolicy``, or its name).
        embedder: embeds entity names for synonym edges when the graph is built: a Haystack
            text or document embedder component or a sentence-transformers model name;
            ``None`` (default) builds no synonym edges.
        synonym_threshold: cosine above which two entity names are linked as synonyms.
    """

    def __init__(
        self,
        document_store: Any,
        top_k: int = 10,
        seed_top_n: int = GraphSettings.seed_top_n,
        entity_share: float = GraphSettings.entity_share,
        use_entities: bool = GraphSettings.use_entities,
        damping: float = GraphSettings.damping,
        graph_path: str | None = None,
        show_progress: bool = False,
        auto_refresh: bool = True,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        embedder: Any = None,
        synonym_threshold: float = DEFAULT_SYNONYM_THRESHOLD,
    ) -> None:
        self.document_store = document_store
        self.top_k = check_positive_int(top_k, "top_k")
        self.settings = GraphSettings(
            seed_top_n=seed_top_n,
            entity_share=entity_share,
            use_entities=use_entities,
            damping=damping,
        )
        self.graph_path = graph_path
        self.show_progress = show_progress
        self.auto_refresh = auto_refresh
        self.filters = check_filters(filters)
        self.filter_policy = as_filter_policy(filter_policy)
        self.embedder = check_embedder(embedder)
        self.synonym_threshold = check_fraction(synonym_threshold, "synonym_threshold")
        self._retriever: GraphRetriever | None = None
        self._built = False
        self._warned_stale = False
        self._lock = threading.RLock()  # one check or build at a time (run_async's threads)

    def warm_up(self) -> None:
        """Build (or load) the graph of the store's documents; does nothing the second time."""
        self._ready()

    def refresh(self) -> None:
        """Rebuild the graph from the store's documents now (and save it to ``graph_path``)."""
        with self._lock:
            self._rebuild(self.document_store.filter_documents())

    def _rebuild(self, documents: list[Document]) -> GraphRetriever | None:
        self._retriever = self._build(documents, load_saved=False)
        self._warned_stale = False
        return self._retriever

    def _build(self, documents: list[Document], *, load_saved: bool) -> GraphRetriever | None:
        """The retriever over ``documents``; ``None`` while the store holds none."""
        self._built = True
        if not documents:
            logger.info("the document store holds no documents: the retriever returns none")
            return None
        corpus = documents_to_corpus(documents)
        folder = None if self.graph_path is None else Path(self.graph_path)
        if load_saved and folder is not None and EntityGraph.is_saved(folder):
            graph = EntityGraph.load(folder, corpus)
        else:
            graph = build_entity_graph(
                corpus,
                encoder=None if self.embedder is None else as_encoder(self.embedder),
                synonym_threshold=self.synonym_threshold,
                show_progress=self.show_progress,
            )
            if folder is not None:
                graph.save(folder)
        return GraphRetriever(graph, corpus, settings=self.settings)

    @property
    def graph(self) -> EntityGraph:
        """The entity graph of the store's documents (built or loaded on first use)."""
        retriever = self._ready()
        if retriever is None:
            raise ValueError("the document store holds no documents: there is no entity graph yet")
        return retriever.graph

    def _ready(self) -> GraphRetriever | None:
        with self._lock:
            if not self._built:
                documents = self.document_store.filter_documents()
                self._retriever = self._build(documents, load_saved=True)
            return self._retriever

    def _current(self) -> GraphRetriever | None:
        """The graph, rebuilt (or flagged) when the store's documents have changed
        (``convert.store_change``)."""
        with self._lock:
            retriever = self._ready()
            corpus = None if retriever is None else retriever.corpus
            reason, documents = store_change(
                self.document_store, corpus, compare_documents=self.auto_refresh
            )
            if reason is None:
                return retriever
            if self.auto_refresh:
                logger.info("the entity graph is stale (%s): rebuilding it", reason)
                return self._rebuild(
                    self.document_store.filter_documents() if documents is None else documents
                )
            if not self._warned_stale:
                self._warned_stale = True
                logger.warning(
                    "the entity graph is stale (%s); call refresh() or set auto_refresh=True",
                    reason,
                )
            return retriever

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            top_k=self.top_k,
            seed_top_n=self.settings.seed_top_n,
            entity_share=self.settings.entity_share,
            use_entities=self.settings.use_entities,
            damping=self.settings.damping,
            graph_path=self.graph_path,
            show_progress=self.show_progress,
            auto_refresh=self.auto_refresh,
            filters=self.filters,
            filter_policy=self.filter_policy.value,
            embedder=embedder_to_dict(self.embedder),
            synonym_threshold=self.synonym_threshold,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntityGraphRetriever:
        return default_from_dict(cls, data)

    def _seeds(self, corpus: Corpus | None, documents: list[Document]) -> list[Candidate]:
        """``documents`` as seeds of the walk over ``corpus`` (``None``: an empty store)."""
        seeds = []
        for document in documents:
            if corpus is None or document.id not in corpus:
                raise ValueError(
                    f"seed document {document.id!r} is not in the document store the graph was "
                    "built from; seed documents must come from the same store (after writing "
                    "to the store, call refresh() or keep auto_refresh=True)"
                )
            seeds.append(
                Candidate(
                    corpus[document.id],
                    float(document.score or 0.0),
                    signals=document_signals(document),
                )
            )
        return seeds

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, list[Document]]:
        """The ``top_k`` documents by PPR from the query's entities and the seed documents,
        both restricted to those matching the filters (``filters`` combined with the init
        filters by ``filter_policy``)."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        active = apply_filter_policy(self.filter_policy, self.filters, check_filters(filters))
        retriever = self._current()
        if retriever is None:  # an empty store: the input is still checked as on any run
            self._seeds(None, documents or [])
            Query(query)
            return {"documents": []}
        if not active:
            seeds = self._seeds(retriever.corpus, documents or [])
            ranked = retriever.rank(Query(query), seeds, k=limit)
        else:
            matching = [d for d in documents or [] if document_matches_filter(active, d)]
            seeds = self._seeds(retriever.corpus, matching)
            ranked = retriever.rank(Query(query), seeds, k=len(retriever.corpus))
        found = [candidate_to_document(c) for c in ranked]
        if active:
            found = [d for d in found if document_matches_filter(active, d)][:limit]
        return {"documents": found}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        documents: list[Document] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, list[Document]]:
        """:meth:`run` in a worker thread (reading the store, building the graph and the walk
        block)."""
        return await asyncio.to_thread(self.run, query, documents, top_k, filters)
