"""``MultiHopRetriever``: rag-multihop's LLM-free multi-hop retriever as a component.

It retrieves from every document of ``document_store`` (``filter_documents()``). The
method (title links, the best pair for ranks 1-2, the link fill, the entity-graph tail) is the
core :class:`rag_multihop.multihop.MultiHopRetriever`; this file only translates.

- **Documents**: ``Document.id`` = passage id, ``content`` = text, ``meta["title"]`` = title
  (the title names and links need it). Returned documents are new ones
  (``dataclasses.replace``) with the score and every signal in
  ``meta["rag_multihop_signals"]``.
- **Vectors**: the documents' own ``embedding`` when every document has one (the output of
  the pipeline's document embedder), else ``embedder`` embeds ``title + "\\n" + content``.
  A store where only some documents have one needs ``embedder`` (the model that embedded
  them, which then embeds every document); without it the run fails naming a document.
  The query: ``run(query_embedding=...)`` (a text embedder's output), else ``embedder``
  embeds the query text. ``embedder`` is a Haystack text or document embedder component, a
  sentence-transformers model name, or ``None``: the bundled all-MiniLM-L6-v2 when it has
  documents to embed, none when they came embedded (then give ``query_embedding``); it must
  be the model that embedded the documents.
- **Lifecycle**: everything is built in :meth:`warm_up` (called by the pipeline, or on the
  first ``run``) and rebuilt when the store's documents change: every run compares the
  store's document count and, when it is the same, its documents' ids, content, meta and
  embeddings with those the retriever was built from (``convert.store_change``, the rule of
  :class:`EntityGraphRetriever`), so an overwrite, a meta edit or a delete + add that keeps
  the count rebuilds it too and a deleted document never comes back. With a remote store,
  where reading every document per run costs too much, set ``auto_refresh=False`` (the count
  only, a warning once when it changed) and call :meth:`refresh` after writing. A store
  that holds no documents yet (a pipeline warmed up before the first ingestion) is fine:
  runs return no documents until some are written.
- **Filters**: ``filters`` (Haystack filter syntax, checked when given, matched in memory by
  Haystack's own rule on the documents the retriever was built from, as for
  :class:`EntityGraphRetriever`) restrict every step to the matching documents: the dense
  candidates, named titles, links and the graph walk reach no other document, and none comes
  back (the core's ``run(..., allowed=...)``). ``filter_policy`` says whether
  ``run(filters=...)`` replaces or merges with the init filters, as for Haystack's own
  retrievers.
- **Settings**: every :class:`rag_multihop.multihop.MultiHopSettings` field is an init
  parameter of its own (flat primitives, as Haystack's integrations take them; defaults and
  checks are the core's), kept as :attr:`settings`; ``to_dict`` stores each.

Example:
    >>> from haystack import Document
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> store = InMemoryDocumentStore()
    >>> _ = store.write_documents([
    ...     Document(id="pw", content="Polish Wedding is a film by Theresa Connelly.",
    ...              meta={"title": "Polish Wedding"}, embedding=[1.0, 0.0, 0.0]),
    ...     Document(id="tc", content="Theresa Connelly was born in Philadelphia.",
    ...              meta={"title": "Theresa Connelly"}, embedding=[0.6, 0.8, 0.0]),
    ...     Document(id="x", content="Rope is a film.", meta={"title": "Rope"},
    ...              embedding=[0.0, 0.0, 1.0]),
    ... ])
    >>> retriever = MultiHopRetriever(store, top_k=2)
    >>> out = retriever.run(query="Where was the director of Polish Wedding born?",
    ...                     query_embedding=[0.9, 0.3, 0.1])
    >>> [d.id for d in out["documents"]], out["trace"]["pair"]
    (['pw', 'tc'], ['pw', 'tc'])
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack.utils.filters import document_matches_filter
from haystack_integrations.common.rag_multihop.convert import (
    DOCUMENT_KEY,
    as_encoder,
    as_filter_policy,
    candidate_to_document,
    check_embedder,
    check_filters,
    documents_to_corpus,
    embedder_to_dict,
    store_change,
)

from rag_multihop.multihop import MultiHopResult as CoreMultiHopResult
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings
from rag_multihop.types import Query
from rag_multihop.validation import as_embedding_matrix, check_positive_int

logger = logging.getLogger(__name__)

_DEFAULTS = MultiHopSettings()


@component
class MultiHopRetriever:
    """The LLM-free multi-hop retriever over a document store (see the module docstring).

    Args:
        document_store: any Haystack document store.
        top_k: documents returned (``run(top_k=...)`` overrides it).
        embedder: embeds documents without an embedding and queries without
            ``query_embedding`` (see the module docstring).
        candidates ... lexical_weight: the :class:`rag_multihop.multihop.MultiHopSettings`
            fields of the same names (see its docstring), kept as :attr:`settings`.
        filters: Haystack filters the retrieved documents must match (module docstring).
        filter_policy: how ``run(filters=...)`` combines with ``filters``: ``REPLACE``
            (default) or ``MERGE`` (Haystack's ``FilterPolicy``, or its name).
        auto_refresh: rebuild when the store's documents changed since the last build
            (checked on every run, see the module docstring); ``False`` checks the count
            only, warns once that the retriever is stale and keeps it until :meth:`refresh`.
    """

    def __init__(
        self,
        document_store: Any,
        *,
        top_k: int = 10,
        embedder: Any = None,
        candidates: int = _DEFAULTS.candidates,
        first_hops: int = _DEFAULTS.first_hops,
        pair: bool = _DEFAULTS.pair,
        keep_first_stage: bool = _DEFAULTS.keep_first_stage,
        title_links: bool = _DEFAULTS.title_links,
        subjects: bool = _DEFAULTS.subjects,
        residual: bool = _DEFAULTS.residual,
        specificity: bool = _DEFAULTS.specificity,
        exclusive_mentions: bool = _DEFAULTS.exclusive_mentions,
        entity_weight: float = _DEFAULTS.entity_weight,
        entity_max_passages: int = _DEFAULTS.entity_max_passages,
        context_weight: float = _DEFAULTS.context_weight,
        context_window: int = _DEFAULTS.context_window,
        fill_depth: int = _DEFAULTS.fill_depth,
        graph_tail: bool = _DEFAULTS.graph_tail,
        graph_cap: int = _DEFAULTS.graph_cap,
        graph_seed_passages: int = _DEFAULTS.graph_seed_passages,
        tail_calibration: str = _DEFAULTS.tail_calibration,
        tail_fusion: str = _DEFAULTS.tail_fusion,
        graph_entity_share: float = _DEFAULTS.graph_entity_share,
        ppr: str = _DEFAULTS.ppr,
        tail_guard: bool = _DEFAULTS.tail_guard,
        second_hops: bool = _DEFAULTS.second_hops,
        asked_relations: bool = _DEFAULTS.asked_relations,
        lexical_weight: float = _DEFAULTS.lexical_weight,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        auto_refresh: bool = True,
    ) -> None:
        self.document_store = document_store
        self.top_k = check_positive_int(top_k, "top_k")
        self.embedder = check_embedder(embedder)
        self.settings = MultiHopSettings(
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
        self.filters = check_filters(filters)
        self.filter_policy = as_filter_policy(filter_policy)
        self.auto_refresh = auto_refresh
        self._core: CoreMultiHopRetriever | None = None
        self._built = False
        self._warned_stale = False
        self._lock = threading.Lock()  # one check or rebuild at a time (run_async's threads)

    def warm_up(self) -> None:
        """Build the retriever over the store's documents (once; again when they change)."""
        self._current()

    def refresh(self) -> None:
        """Rebuild the retriever from the store's documents now."""
        with self._lock:
            self._rebuild(self.document_store.filter_documents())

    def _rebuild(self, documents: list[Document]) -> CoreMultiHopRetriever | None:
        """The retriever over ``documents``; ``None`` while the store holds none (runs
        return no documents until some are written)."""
        self._built, self._warned_stale = True, False
        if not documents:
            logger.info("the document store holds no documents: the retriever returns none")
            self._core = None
            return None
        corpus = documents_to_corpus(documents)
        missing = [d.id for d in documents if d.embedding is None]
        if missing and len(missing) < len(documents) and self.embedder is None:
            raise ValueError(
                f"{len(missing)} of {len(documents)} documents in the store have no embedding "
                f"(e.g. {missing[0]!r}) and the others have one: embed them all with the "
                "document embedder, or pass embedder=... (the model that embedded the others) "
                "to embed every document with it"
            )
        if not missing:
            encoder = None if self.embedder is None else as_encoder(self.embedder)
            vectors = as_embedding_matrix(
                [d.embedding for d in documents],
                name="document embeddings",
                ids=[d.id for d in documents],
            )
        else:
            encoder = as_encoder(self.embedder)
            vectors = encoder.encode(corpus.texts())
        self._core = CoreMultiHopRetriever(corpus, vectors, encoder=encoder, settings=self.settings)
        return self._core

    def _current(self) -> CoreMultiHopRetriever | None:
        """The retriever, rebuilt (or flagged) when the store's documents have changed."""
        with self._lock:
            if not self._built:
                return self._rebuild(self.document_store.filter_documents())
            corpus = None if self._core is None else self._core.corpus
            reason, documents = store_change(
                self.document_store, corpus, compare_documents=self.auto_refresh
            )
            if reason is None:
                return self._core
            if self.auto_refresh:
                logger.info("the multi-hop retriever is stale (%s): rebuilding it", reason)
                return self._rebuild(
                    self.document_store.filter_documents() if documents is None else documents
                )
            if not self._warned_stale:
                self._warned_stale = True
                logger.warning(
                    "the multi-hop retriever is stale (%s); call refresh() or set "
                    "auto_refresh=True",
                    reason,
                )
            return self._core

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            top_k=self.top_k,
            embedder=embedder_to_dict(self.embedder),
            **dataclasses.asdict(self.settings),
            filters=self.filters,
            filter_policy=self.filter_policy.value,
            auto_refresh=self.auto_refresh,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MultiHopRetriever:
        return default_from_dict(cls, data)

    def _allowed(
        self, core: CoreMultiHopRetriever, filters: dict[str, Any] | None
    ) -> set[str] | None:
        """Ids of the documents matching ``filters`` combined with the init filters by
        ``filter_policy`` (``None``: no filter, every document)."""
        active = apply_filter_policy(self.filter_policy, self.filters, check_filters(filters))
        if not active:
            return None
        return {
            passage.id
            for passage in core.corpus
            if document_matches_filter(active, passage.metadata[DOCUMENT_KEY])
        }

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    def run(
        self,
        query: str,
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``top_k`` best documents for ``query`` among those matching the filters, and the
        query's trace."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        core = self._current()
        if core is None:
            check_filters(filters)
            empty = CoreMultiHopResult.empty(Query(query))
            return {"documents": [], "trace": empty.trace.to_dict()}
        allowed = self._allowed(core, filters)
        if query_embedding is None and core.encoder is None:
            raise ValueError(
                "no query_embedding and no embedder: the documents came embedded, so connect "
                "the text embedder of their model to query_embedding, or pass embedder=..."
            )
        vector = None if query_embedding is None else np.asarray(query_embedding, np.float32)
        result = core.run(Query(query, embedding=vector), limit, allowed=allowed)
        return {
            "documents": [candidate_to_document(c) for c in result.candidates],
            "trace": result.trace.to_dict(),
        }

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    async def run_async(
        self,
        query: str,
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """:meth:`run` in a worker thread (reading the store, rebuilding and embedding block)."""
        return await asyncio.to_thread(self.run, query, query_embedding, top_k, filters)
