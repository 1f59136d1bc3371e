"""A persistent rag-multihop corpus index fed by an ``IngestionPipeline`` and read by a retriever.

- :class:`CorpusIndexWriter` is a ``TransformComponent``: put it after the embed model in an
  ``IngestionPipeline`` and every node that goes through is upserted into the
  :class:`rag_multihop.store.CorpusIndex` at ``index_path`` (created on the first call, with
  the nodes' embedding dimension). Nodes of a source document (``node.ref_doc_id``) replace
  that document's earlier nodes, in one index version: a changed file ingested again (its
  chunks under new ids) leaves none of its old chunks behind
  (:mod:`rag_multihop.store.sources`); an unchanged node costs no write.
  :meth:`CorpusIndexWriter.delete_ref_doc` and :meth:`CorpusIndexWriter.delete` remove a
  document's nodes / nodes by id (call them where you call ``delete_ref_doc`` /
  ``delete_nodes`` on your index). Nodes pass through unchanged, so the pipeline's vector
  store still gets them.
- :class:`CorpusIndexMultiHopRetriever` answers from the persisted index (the core's
  ``MultiHopRetriever.from_index``): it never reads the vector store's documents, and before
  each query compares the index's version with the one it opened, reopening (no rebuild:
  memory maps) only when a writer has moved on. With ``vector_store=`` (your
  ``VectorStoreIndex`` over Chroma/Qdrant/..., or any retriever of it) the dense first stage
  is your store's search instead of the index's own: the index contributes titles, links and
  the entity graph; node ids the index lacks are skipped and counted in
  ``last_trace.stale_candidates``. An index that holds no passages (created empty, or
  emptied by deletes) answers no nodes until some are written.

Nodes become passages by the package's rule (node id, own text, ``metadata["title"]``);
returned nodes are ``TextNode``s with that id, text and title and every signal under
``metadata["rag_multihop_signals"]``.

Example:
    >>> import tempfile
    >>> from llama_index.core.ingestion import IngestionPipeline
    >>> from llama_index.core.schema import TextNode
    >>> path = tempfile.mkdtemp() + "/corpus.idx"
    >>> pipeline = IngestionPipeline(transformations=[CorpusIndexWriter(index_path=path)])
    >>> nodes = pipeline.run(nodes=[
    ...     TextNode(id_="pw", text="Polish Wedding is a film by Theresa Connelly.",
    ...              metadata={"title": "Polish Wedding"}, embedding=[1.0, 0.0, 0.0]),
    ...     TextNode(id_="tc", text="Theresa Connelly was born in Philadelphia.",
    ...              metadata={"title": "Theresa Connelly"}, embedding=[0.6, 0.8, 0.0])])
    >>> retriever = CorpusIndexMultiHopRetriever(path, similarity_top_k=2)
    >>> query = QueryBundle("Where was the director of Polish Wedding born?",
    ...                     embedding=[0.9, 0.3, 0.1])
    >>> [n.node.node_id for n in retriever.retrieve(query)]
    ['pw', 'tc']
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import field_validator
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import (
    BaseNode,
    NodeWithScore,
    QueryBundle,
    TextNode,
    TransformComponent,
)
from llama_index.retrievers.rag_multihop._convert import (
    TITLE_KEY,
    ThreadTrace,
    as_encoder,
    node_to_candidate,
    node_to_passage,
    settings_embed_model,
    with_signals,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.multihop import MultiHopResult as CoreMultiHopResult
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings, MultiHopTrace
from rag_multihop.store import CorpusIndex, IndexSnapshot, merge_policy
from rag_multihop.store.segment import POINTER
from rag_multihop.store.sources import delete_sources, write_sources
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import (
    as_embedding_matrix,
    check_batch_dim,
    check_positive_int,
    check_source_ids,
    check_unique_ids,
    warn_textless,
)

logger = logging.getLogger(__name__)


class CorpusIndexWriter(TransformComponent):
    """Upserts the nodes of a pipeline run into the corpus index at ``index_path``.

    Every node needs its ``embedding`` (put the writer after the embed model), of the
    index's dimension, and an id no other node of the batch has; these are checked before
    anything is written (a node without text is written, with a warning). An
    ``IngestionPipeline`` with its cache on skips a step whose nodes and :meth:`to_dict`
    it has seen; the writer's dict carries the index's current version, so that a cached
    run stands in for the writer only while the index is at the version the writer last
    left it with those nodes (a delete, another writer or a removed index folder since
    makes the pipeline call it again).
    """

    index_path: str
    merge_factor: int = 10
    """How many small trailing segments of one size make a write merge them (the core's
    ``MergePolicy``; 0: never, until ``compact()``)."""

    @field_validator("merge_factor")
    @classmethod
    def _valid_merge_factor(cls, value: int) -> int:
        merge_policy(value)
        return value

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        data = super().to_dict(**kwargs)
        data[INDEX_STATE_KEY] = _index_state(self.index_path)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> CorpusIndexWriter:
        return super().from_dict({k: v for k, v in data.items() if k != INDEX_STATE_KEY}, **kwargs)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        if not nodes:
            return nodes
        ids = [node.node_id for node in nodes]
        missing = [node.node_id for node in nodes if node.embedding is None]
        if missing:
            raise ValueError(
                f"{len(missing)} node(s) have no embedding, e.g. {missing[:3]}; put "
                "CorpusIndexWriter after the embed model in the pipeline"
            )
        check_unique_ids(ids, "node")
        vectors = as_embedding_matrix(
            [node.embedding for node in nodes], name="node embeddings", ids=ids
        )
        passages = [_plain(node_to_passage(node)) for node in nodes]
        sources = [node.ref_doc_id for node in nodes]
        check_source_ids(ids, sources, "node", "ref_doc_id")
        warn_textless(passages, "node")
        index = self._index(vectors.shape[1])
        check_batch_dim(vectors.shape[1], index.dim, ids[0], "node", self.index_path)
        write_sources(index, passages, vectors, sources)
        return nodes

    def delete(self, node_ids: Sequence[str], *, missing_ok: bool = True) -> int:
        """Delete nodes from the index by id; the index's new version."""
        return self._open().delete(node_ids, missing_ok=missing_ok)

    def delete_ref_doc(self, ref_doc_id: str) -> int:
        """Delete every node this writer wrote for the source document ``ref_doc_id``
        (as ``index.delete_ref_doc`` does in the vector store); the index's new version."""
        return delete_sources(self._open(), [ref_doc_id])

    def _open(self) -> CorpusIndex:
        return CorpusIndex(self.index_path, merge=merge_policy(self.merge_factor))

    def _index(self, dim: int) -> CorpusIndex:
        if (Path(self.index_path) / POINTER).exists():
            return self._open()
        return CorpusIndex.create(self.index_path, dim=dim, merge=merge_policy(self.merge_factor))


INDEX_STATE_KEY = "index_state"
"""The key of :meth:`CorpusIndexWriter.to_dict` that holds the index's current version."""


def _index_state(path: str) -> str:
    """The index's current manifest at ``path`` and when it became current (a recreated
    index's first version differs from the removed one's); while there is no index, a
    value never seen before, so that no cached run stands in for the write creating it."""
    pointer = Path(path) / POINTER
    try:
        return f"{pointer.read_text(encoding='utf-8').strip()}@{pointer.stat().st_mtime_ns}"
    except OSError:
        return f"absent-{uuid.uuid4().hex}"


def _plain(passage: Passage) -> Passage:
    """The passage without the node riding in its metadata (the index keeps no objects)."""
    return Passage(passage.id, passage.text, passage.title)


class CorpusIndexMultiHopRetriever(BaseRetriever):
    """The multi-hop retriever over a persisted corpus index (module docstring).

    Args:
        index_path: the index folder (written by :class:`CorpusIndexWriter` or
            ``rag-multihop index``).
        similarity_top_k: nodes returned (``> 0``).
        embed_model: embeds queries without an embedding (default:
            ``Settings.embed_model``).
        vector_store: where the dense candidates come from: a ``VectorStoreIndex`` (searched
            with ``as_retriever(similarity_top_k=candidates)``) or any ``BaseRetriever``
            (give it a ``similarity_top_k`` of at least ``candidates``); ``None``: the
            index's own search.
        preload: map every page of each version the retriever opens
            (:meth:`rag_multihop.store.IndexSnapshot.preload`): steady latency from the first
            query for a long-running server, at the cost of reading the index's files.
        settings: :class:`rag_multihop.multihop.MultiHopSettings`; ``candidates`` ...
            ``lexical_weight`` override the same-named fields of it (``None`` keeps the
            field), as for :class:`MultiHopRetriever`.

    ``last_trace`` is the core :class:`~rag_multihop.multihop.MultiHopTrace` of the last query
    run in the calling thread.
    """

    last_trace = ThreadTrace()

    def __init__(
        self,
        index_path: str | Path,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        *,
        embed_model: BaseEmbedding | None = None,
        vector_store: Any = None,
        preload: bool = False,
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
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
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
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        if not isinstance(preload, bool):
            raise ValueError(f"preload must be True or False, got {preload!r}")
        self.preload = preload
        self.index_path = Path(index_path)
        self.index: CorpusIndex | None = None
        self._embed_model = embed_model or settings_embed_model()
        self._first_stage = _store_search(vector_store, self.settings.candidates)
        self._snapshot: IndexSnapshot | None = None
        self._core: CoreMultiHopRetriever | None = None
        self._lock = threading.Lock()
        self._waiting = False
        self._current()  # open now: bad settings and a bad index fail here
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _current(self) -> CoreMultiHopRetriever | None:
        """The core retriever over the index's current version (``None`` while there is no
        index at the path or it holds no passages), reopened when a writer has moved on."""
        with self._lock:
            return self._reopened()

    def _reopened(self) -> CoreMultiHopRetriever | None:
        if self.index is None:
            if not (self.index_path / POINTER).exists():
                if not self._waiting:
                    logger.warning(
                        "no corpus index at %s yet: answering no nodes until a writer creates it",
                        self.index_path,
                    )
                    self._waiting = True
                return None
            self.index = CorpusIndex(self.index_path)
        if self._snapshot is None or not self._snapshot.is_current():
            self._snapshot = self.index.snapshot()
            if self.preload:
                self._snapshot.preload()
            encoder = None if self._embed_model is None else as_encoder(self._embed_model)
            self._core = None
            if self._snapshot.n_live:
                self._core = CoreMultiHopRetriever.from_index(
                    self._snapshot,
                    encoder=encoder,
                    settings=self.settings,
                    first_stage=self._first_stage,
                )
        return self._core

    @property
    def core(self) -> CoreMultiHopRetriever:
        """The core retriever over the index's current version (reopened when stale); an
        error while the index holds no passages."""
        core = self._current()
        if core is None:
            raise ValueError(f"the index at {self.index_path} holds no passages yet")
        return core

    @property
    def version(self) -> int:
        """The index version the last query read (0 while there is no index at the path)."""
        self._current()
        return 0 if self._snapshot is None else self._snapshot.version

    def _ranked(
        self, query_bundle: QueryBundle, embedding: Sequence[float] | None
    ) -> tuple[list[NodeWithScore], MultiHopTrace]:
        """The ranked nodes and the core's trace (the caller keeps it as its thread's)."""
        if embedding is None:
            raise ValueError(
                "the query bundle carries no embedding and no embed model is set: pass "
                "embed_model=..., set Settings.embed_model, or give QueryBundle(embedding=...)"
            )
        vector = np.asarray(embedding, dtype=np.float32)
        core = self._current()
        snapshot = self._snapshot
        if snapshot is not None and vector.size != snapshot.dim:
            raise ValueError(
                f"the query embedding has dimension {vector.size}, but the index at "
                f"{self.index_path} holds dimension {snapshot.dim}: embed queries with the "
                "model that embedded the indexed nodes (the QueryBundle's embedding, else "
                "embed_model)"
            )
        query = Query(query_bundle.query_str, embedding=vector)
        result = (
            CoreMultiHopResult.empty(query)
            if core is None
            else core.run(query, self.similarity_top_k)
        )
        return [_node(c) for c in result.candidates], result.trace

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = query_bundle.embedding
        if embedding is None and self._embed_model is not None:
            embedding = self._embed_model.get_query_embedding(query_bundle.query_str)
        nodes, self.last_trace = self._ranked(query_bundle, embedding)
        return nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` with the embed model's async call and the search (reopening,
        the store's search, the ranking) in a worker thread, off the event loop."""
        embedding = query_bundle.embedding
        if embedding is None and self._embed_model is not None:
            embedding = await self._embed_model.aget_query_embedding(query_bundle.query_str)
        nodes, self.last_trace = await asyncio.to_thread(self._ranked, query_bundle, embedding)
        return nodes


def _node(candidate: Candidate) -> NodeWithScore:
    p = candidate.passage
    node = TextNode(id_=p.id, text=p.text, metadata={TITLE_KEY: p.title})
    return NodeWithScore(node=with_signals(node, candidate.signals), score=float(candidate.score))


class _StoreSearch:
    """A LlamaIndex retriever as the core's first stage: one retrieve per query, on the
    query's embedding when it has one."""

    def __init__(self, retriever: BaseRetriever) -> None:
        self.retriever = retriever

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        embedding = None if query.embedding is None else [float(x) for x in query.embedding]
        nodes = self.retriever.retrieve(QueryBundle(query.text, embedding=embedding))
        return [node_to_candidate(node) for node in nodes[:k]]


def _store_search(vector_store: Any, candidates: int) -> _StoreSearch | None:
    """The first stage of ``vector_store`` (see :class:`CorpusIndexMultiHopRetriever`)."""
    if vector_store is None:
        return None
    if isinstance(vector_store, BaseRetriever):
        return _StoreSearch(vector_store)
    if callable(getattr(vector_store, "as_retriever", None)):
        return _StoreSearch(vector_store.as_retriever(similarity_top_k=candidates))
    raise TypeError(
        "vector_store must be a VectorStoreIndex (anything with as_retriever()) or a "
        f"BaseRetriever, got {type(vector_store).__name__}"
    )
