"""``EntityGraphRetriever``: rag-multihop's entity graph + Personalized PageRank over nodes.

Build it from the nodes you already index (:meth:`EntityGraphRetriever.from_nodes`), with any
``BaseRetriever`` over the same nodes as ``seed_retriever`` (e.g. ``index.as_retriever()``):
its top nodes seed the walk next to the query's entities. Combine it with the vector
retriever in :class:`~llama_index.retrievers.rag_multihop.fusion.PITFusionRetriever`.

Translation rules (the package's one rule): a node becomes a passage with id ``node.node_id``,
text ``node.get_content(MetadataMode.NONE)`` and title ``node.metadata["title"]`` (when
present); results come back as copies of the given nodes with the PPR score and the signals
under ``metadata["rag_multihop_signals"]``. Seed nodes must be among
the graph's nodes (same ids); the walk drops a seed whose score is <= 0 (a warning says so
when every seed is such a one). Synonym edges need an ``embed_model`` (any LlamaIndex
``BaseEmbedding``); without one the graph has none. The graph persists beside LlamaIndex's own
storage: ``retriever.persist("./storage")`` next to ``index.storage_context.persist("./storage")``
writes ``./storage/rag_multihop_entity_graph/``, and
``EntityGraphRetriever.from_persist_dir("./storage")`` reloads it with the nodes of the
persisted docstore (or the ``nodes`` you pass).

``filters`` (LlamaIndex ``MetadataFilters``) decide which nodes seed the walk and which come
back, matched on node metadata with LlamaIndex's own in-memory rule (the one
``SimpleVectorStore`` applies); the walk itself runs over the whole graph. A LlamaIndex
retriever takes its filters when it is built, not per query, so the graph retriever cannot
pass them to ``seed_retriever``: build that one with the same filters
(``index.as_retriever(filters=filters)``) so it does not spend its top nodes on excluded ones.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> nodes = [
    ...     TextNode(id_="a", text="Rope is by Alfred Hitchcock.", metadata={"title": "Rope"}),
    ...     TextNode(id_="b", text="Alfred Hitchcock was a director."),
    ... ]
    >>> retriever = EntityGraphRetriever.from_nodes(nodes, similarity_top_k=2)
    >>> [n.node.node_id for n in retriever.retrieve("Who directed Rope?")]
    ['a', 'b']
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters
from llama_index.core.vector_stores.utils import build_metadata_filter_fn
from llama_index.retrievers.rag_multihop._convert import (
    NODE_KEY,
    as_encoder,
    candidate_to_node,
    check_metadata_filters,
    node_signals,
    nodes_to_corpus,
    settings_embed_model,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.graph import (
    EntityExtractor,
    EntityGraph,
    GraphRetriever,
    GraphSettings,
    build_entity_graph,
)
from rag_multihop.graph.build import DEFAULT_SYNONYM_THRESHOLD
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


GRAPH_FOLDER = "rag_multihop_entity_graph"
"""The folder, inside a LlamaIndex ``persist_dir``, that holds the entity graph."""


class EntityGraphRetriever(BaseRetriever):
    """Personalized PageRank over the entity graph of ``nodes`` (see the module docstring).

    Args:
        graph: the :class:`EntityGraph` of ``nodes`` (checked against them).
        nodes: the nodes the graph was built from; results are these node objects.
        seed_retriever: optional retriever whose top ``seed_top_n`` nodes seed the walk
            (weighted by score; one with a score <= 0 seeds nothing).
        extractor: query entity extractor; use the one the graph was built with.
        similarity_top_k: nodes returned.
        filters: ``MetadataFilters`` the seed and returned nodes must match (module
            docstring); nested ones are refused.
        settings: a :class:`rag_multihop.graph.GraphSettings` (default: its defaults).
        seed_top_n, entity_share, use_entities, damping: override the same-named field of
            ``settings`` (``None`` keeps it; checks are the core's); the retriever keeps the
            result as :attr:`settings`.
    """

    def __init__(
        self,
        graph: EntityGraph,
        nodes: Sequence[BaseNode],
        *,
        seed_retriever: BaseRetriever | None = None,
        extractor: EntityExtractor | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        settings: GraphSettings | None = None,
        seed_top_n: int | None = None,
        entity_share: float | None = None,
        use_entities: bool | None = None,
        damping: float | None = None,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self._corpus = nodes_to_corpus(nodes)
        settings = resolve_settings(
            GraphSettings,
            settings,
            seed_top_n=seed_top_n,
            entity_share=entity_share,
            use_entities=use_entities,
            damping=damping,
        )
        self._graph = GraphRetriever(graph, self._corpus, extractor=extractor, settings=settings)
        self._seed_retriever = seed_retriever
        self.filters = check_metadata_filters(filters)
        self._matches = build_metadata_filter_fn(
            lambda node_id: self._corpus[node_id].metadata[NODE_KEY].metadata, filters
        )
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_nodes(
        cls,
        nodes: Sequence[BaseNode],
        *,
        extractor: EntityExtractor | None = None,
        embed_model: BaseEmbedding | None = None,
        synonym_threshold: float = DEFAULT_SYNONYM_THRESHOLD,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> EntityGraphRetriever:
        """Build the entity graph of ``nodes`` and a retriever on it (``kwargs`` go to init).

        Synonym edges need an embed model: ``embed_model``, else ``Settings.embed_model``;
        without either the graph has none.
        """
        embed_model = embed_model or settings_embed_model()
        graph = build_entity_graph(
            nodes_to_corpus(nodes),
            extractor,
            encoder=None if embed_model is None else as_encoder(embed_model),
            synonym_threshold=synonym_threshold,
            show_progress=show_progress,
        )
        return cls(graph, nodes, extractor=extractor, **kwargs)

    def persist(self, persist_dir: str | os.PathLike[str] = "./storage") -> Path:
        """Save the graph beside a ``StorageContext.persist(persist_dir)``; returns its folder."""
        folder = Path(persist_dir) / GRAPH_FOLDER
        self.graph.save(folder)
        return folder

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str] = "./storage",
        nodes: Sequence[BaseNode] | None = None,
        **kwargs: Any,
    ) -> EntityGraphRetriever:
        """The retriever on the graph saved by :meth:`persist` in ``persist_dir``, over
        ``nodes`` (default: the nodes of the docstore persisted there); ``kwargs`` go to init.

        Raises:
            ValueError: no nodes given and the persisted docstore holds none (a vector store
                that keeps the text itself, such as Chroma, leaves the docstore empty), or the
                graph was built from other nodes.
        """
        if nodes is None:
            from llama_index.core import StorageContext

            docstore = StorageContext.from_defaults(persist_dir=str(persist_dir)).docstore
            nodes = list(docstore.docs.values())
            if not nodes:
                raise ValueError(
                    f"the docstore persisted in {persist_dir} holds no nodes (a vector store "
                    "that keeps the text, such as Chroma, leaves it empty); pass nodes=..."
                )
        graph = EntityGraph.load(Path(persist_dir) / GRAPH_FOLDER, nodes_to_corpus(nodes))
        return cls(graph, nodes, **kwargs)

    @property
    def graph(self) -> EntityGraph:
        return self._graph.graph

    @property
    def settings(self) -> GraphSettings:
        """The walk's :class:`~rag_multihop.graph.GraphSettings`."""
        return self._graph.settings

    def _seeds(self, found: Sequence[NodeWithScore]) -> list[Candidate]:
        seeds = []
        for item in found:
            node_id = item.node.node_id
            if node_id not in self._corpus:
                raise ValueError(
                    f"seed retriever returned node {node_id!r}, which is not among the graph's "
                    "nodes; the seed retriever must retrieve from the same nodes"
                )
            seeds.append(
                Candidate(
                    self._corpus[node_id], float(item.get_score()), signals=node_signals(item.node)
                )
            )
        return seeds

    def _rank(
        self, query_bundle: QueryBundle, seeds: Sequence[NodeWithScore]
    ) -> list[NodeWithScore]:
        query = Query(query_bundle.query_str)
        kept = [seed for seed in self._seeds(seeds) if self._matches(seed.id)]
        filtered = self.filters is not None and bool(self.filters.filters)
        k = len(self._corpus) if filtered else self.similarity_top_k
        walked = self._graph.rank(query, kept, k=k)
        if filtered:
            walked = [c for c in walked if self._matches(c.id)][: self.similarity_top_k]
        return [candidate_to_node(c) for c in walked]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        seeds = [] if self._seed_retriever is None else self._seed_retriever.retrieve(query_bundle)
        return self._rank(query_bundle, seeds)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        seeds = (
            []
            if self._seed_retriever is None
            else await self._seed_retriever.aretrieve(query_bundle)
        )
        return self._rank(query_bundle, seeds)
