"""``MultiHopRetriever``: rag-multihop's LLM-free multi-hop retriever over LlamaIndex nodes.

Build it from the nodes you index. Everything (title links, the best pair for ranks 1-2, the
link fill, the entity-graph tail) is the core :class:`rag_multihop.multihop.MultiHopRetriever`;
this file only translates.

- **Nodes**: node id = passage id, ``get_content(MetadataMode.NONE)`` = text,
  ``metadata["title"]`` = title (the title names and links need it: on nodes without titles
  the method reduces to dense retrieval plus shared entities and the graph). Returned nodes
  are copies of the given ones with the score and every signal under
  ``metadata["rag_multihop_signals"]`` (hidden from the LLM and the embedder).
- **Vectors**: the nodes' own ``embedding`` when every node has one, else ``embed_model``
  (else ``Settings.embed_model``, else the bundled all-MiniLM-L6-v2) embeds
  ``title + "\\n" + text``. The query is embedded by the same model
  (``get_query_embedding``) unless the ``QueryBundle`` carries an embedding.
- **Filters**: ``filters`` (LlamaIndex ``MetadataFilters``, matched on node metadata by
  LlamaIndex's in-memory rule, as for :class:`EntityGraphRetriever`) restrict every step to
  the matching nodes: the dense candidates, named titles, links and the graph walk reach no
  other node, and none comes back (the core's ``run(..., allowed=...)``).
- **Settings**: ``settings=`` a :class:`rag_multihop.multihop.MultiHopSettings` and/or a
  typed keyword per field overriding it (``None`` keeps it; defaults and checks are the
  core's), as for every retriever of this package.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> nodes = [
    ...     TextNode(id_="pw", text="Polish Wedding is a film by Theresa Connelly.",
    ...              metadata={"title": "Polish Wedding"}, embedding=[1.0, 0.0, 0.0]),
    ...     TextNode(id_="tc", text="Theresa Connelly was born in Philadelphia.",
    ...              metadata={"title": "Theresa Connelly"}, embedding=[0.6, 0.8, 0.0]),
    ...     TextNode(id_="x", text="Rope is a film.", metadata={"title": "Rope"},
    ...              embedding=[0.0, 0.0, 1.0]),
    ... ]
    >>> retriever = MultiHopRetriever(nodes, similarity_top_k=2)
    >>> query = QueryBundle("Where was the director of Polish Wedding born?",
    ...                     embedding=[0.9, 0.3, 0.1])
    >>> [n.node.node_id for n in retriever.retrieve(query)]
    ['pw', 'tc']
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters
from llama_index.core.vector_stores.utils import build_metadata_filter_fn
from llama_index.retrievers.rag_multihop._convert import (
    NODE_KEY,
    ThreadTrace,
    as_encoder,
    candidate_to_node,
    check_metadata_filters,
    nodes_to_corpus,
    settings_embed_model,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.encoders.base import Encoder
from rag_multihop.graph import EntityGraph
from rag_multihop.multihop import MultiHopResult as CoreMultiHopResult
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings
from rag_multihop.types import Query
from rag_multihop.validation import as_embedding_matrix, check_positive_int


def _encoder(embed_model: BaseEmbedding | None) -> tuple[BaseEmbedding | None, Encoder]:
    """The embed model in use (``embed_model``, else ``Settings.embed_model``) and its
    encoder; the bundled MiniLM when neither is set."""
    embed_model = embed_model or settings_embed_model()
    if embed_model is not None:
        return embed_model, as_encoder(embed_model)
    from rag_multihop.encoders import default_encoder

    return None, default_encoder()


def _check_all_or_none_embedded(nodes: Sequence[BaseNode], embed_model: object) -> None:
    """Without an embed model, nodes are embedded by the bundled MiniLM only when none has
    an embedding: some with one were embedded by a model this retriever does not know, and
    re-embedding them would silently change their space (and the queries' dimension)."""
    missing = [node.node_id for node in nodes if node.embedding is None]
    if embed_model is None and len(missing) < len(nodes):
        raise ValueError(
            f"{len(missing)} of {len(nodes)} nodes have no embedding (e.g. {missing[:3]}) and "
            "no embed_model is set to embed them: embed every node, or pass the embed_model "
            "that embedded the others"
        )


class MultiHopRetriever(BaseRetriever):
    """The LLM-free multi-hop retriever over ``nodes`` (see the module docstring).

    Args:
        nodes: the nodes to retrieve from (ids unique); results are copies of them.
        similarity_top_k: nodes returned (``> 0``).
        embed_model: embeds nodes without an embedding and queries (default:
            ``Settings.embed_model``, else the bundled MiniLM).
        graph: an entity graph of ``nodes`` (built when needed and not given).
        filters: ``MetadataFilters`` the nodes must match to be retrieved (module docstring).
        settings: :class:`rag_multihop.multihop.MultiHopSettings`; ``candidates`` ...
            ``lexical_weight`` override the same-named fields of it (``None`` keeps the field).

    ``last_trace`` is the core :class:`~rag_multihop.multihop.MultiHopTrace` of the last query
    run in the calling thread (the question's title mentions, the pair, the first hops tried).
    """

    last_trace = ThreadTrace()

    def __init__(
        self,
        nodes: Sequence[BaseNode],
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        *,
        embed_model: BaseEmbedding | None = None,
        graph: EntityGraph | None = None,
        filters: MetadataFilters | None = None,
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
        settings = resolve_settings(
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
        self.filters = check_metadata_filters(filters)
        corpus = nodes_to_corpus(nodes)
        self._allowed: frozenset[str] | None = None
        if self.filters is not None and self.filters.filters:
            matches = build_metadata_filter_fn(
                lambda pid: corpus[pid].metadata[NODE_KEY].metadata, self.filters
            )
            self._allowed = frozenset(pid for pid in corpus.ids if matches(pid))
        given = [node.embedding for node in nodes]
        encoder: Encoder | None
        if all(vector is not None for vector in given):
            self._embed_model = embed_model or settings_embed_model()
            encoder = None if self._embed_model is None else as_encoder(self._embed_model)
            vectors = as_embedding_matrix(
                given, name="node embeddings", ids=[node.node_id for node in nodes]
            )
        else:
            _check_all_or_none_embedded(nodes, embed_model or settings_embed_model())
            self._embed_model, encoder = _encoder(embed_model)
            vectors = encoder.encode(corpus.texts())
        self.core = CoreMultiHopRetriever(
            corpus, vectors, encoder=encoder, graph=graph, settings=settings
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def settings(self) -> MultiHopSettings:
        """The core's :class:`~rag_multihop.multihop.MultiHopSettings`."""
        return self.core.settings

    def _query(self, query_bundle: QueryBundle, embedding: Sequence[float] | None) -> Query:
        if embedding is None and self.core.encoder is None:
            raise ValueError(
                "the query bundle carries no embedding and no embed model is set: pass "
                "embed_model=..., set Settings.embed_model, or give QueryBundle(embedding=...)"
            )
        vector = None if embedding is None else np.asarray(embedding, dtype=np.float32)
        return Query(query_bundle.query_str, embedding=vector)

    def _nodes(self, result: CoreMultiHopResult) -> list[NodeWithScore]:
        self.last_trace = result.trace  # in the calling thread (ThreadTrace)
        return [candidate_to_node(c) for c in result.candidates]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = query_bundle.embedding
        if embedding is None and self._embed_model is not None:
            embedding = self._embed_model.get_query_embedding(query_bundle.query_str)
        query = self._query(query_bundle, embedding)
        return self._nodes(self.core.run(query, self.similarity_top_k, allowed=self._allowed))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = query_bundle.embedding
        if embedding is None and self._embed_model is not None:
            embedding = await self._embed_model.aget_query_embedding(query_bundle.query_str)
        query = self._query(query_bundle, embedding)
        result = await asyncio.to_thread(
            self.core.run, query, self.similarity_top_k, allowed=self._allowed
        )
        return self._nodes(result)
