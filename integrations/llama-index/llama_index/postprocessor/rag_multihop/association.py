"""AAR (association-augmented reranking) as a LlamaIndex node postprocessor.

The postprocessor translates nodes into rag-multihop candidates (text and title by the
package's one rule, see :mod:`llama_index.retrievers.rag_multihop._convert`), calls
:class:`rag_multihop.association.AssociationReranker` and returns **new** nodes: copies whose
score is the blended AAR score and whose ``metadata["rag_multihop_signals"]`` holds the
signals ``association``, ``cosine`` and ``retrieval_score`` (the incoming score) next to any
earlier rag-multihop signals, hidden from the LLM and the embedder. The input nodes are never
modified.

**Which passage a node is.** By default the node id; with ``id_key`` the value of
``node.metadata[id_key]`` (train the model on those ids, e.g. a document id you store as
metadata, when the vector store assigns its own node ids such as UUIDs).

**Encoder identity.** The embed model must be the model's encoder: it is checked once per
embed model against the fingerprint the saved model recorded (its embeddings of fixed probe
texts), so the same model under another name is accepted and a different model, even of
the same dimension, is a ``ValueError`` (models saved without a fingerprint compare names).

**Vectors.** A node the saved model stores uses its stored vector and precomputed f(p). Any
other node uses ``node.embedding`` when the vector store returned it, else the embed model
embeds its ``title + "\\n" + text``, remembered by content hash so each text is embedded once;
the first such fallback logs a warning (it is slower, and the model has not seen the
passage). The query is embedded by the embed model; without one, ``query_bundle.embedding``
is used. The embed model is ``embed_model``, else LlamaIndex's ``Settings.embed_model``, so
the postprocessor works wherever LlamaIndex calls postprocessors: query engines, chat engines
(``condense_plus_context`` and friends), ``postprocess_nodes``.

**From a persistent corpus index.** With ``index_path`` instead of ``model_path`` the model
and every passage's vector and f(p) are read from the index's ``aar`` sidecar
(``CorpusIndex.attach_sidecar(AssociationSidecar.of(reranker))``; node ids are the index's
passage ids): nothing is recomputed, and the index is reopened when a writer moves its
version (passages added later are scored from their stored f(p)).

Example:
    >>> from llama_index.postprocessor.rag_multihop import AssociationRerank
    >>> rerank = AssociationRerank(model_path="models/aar-demo", top_n=3)  # doctest: +SKIP
    >>> rerank = AssociationRerank(index_path="corpus.idx", top_n=3)  # doctest: +SKIP
    >>> query_engine = index.as_query_engine(node_postprocessors=[rerank])  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import (
    NODE_KEY,
    as_encoder,
    candidate_to_node,
    check_one_node_per_id,
    node_to_candidate,
    settings_embed_model,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.association import AssociationReranker
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.encoders import Encoder, MemoEncoder
from rag_multihop.types import Candidate, Query

logger = logging.getLogger(__name__)

RETRIEVAL_SCORE_KEY = "retrieval_score"
"""Signal holding the score a node had before reranking (LlamaIndex's name for it)."""


class AssociationRerank(BaseNodePostprocessor):
    """Rerank nodes by ``(1 − λ)·cos(q, p) + λ·a(q, p)`` with a trained association model.

    Args:
        model_path: directory of a saved model (``rag-multihop aar train`` or
            ``AssociationReranker.save``); loaded on first use.
        index_path: instead of ``model_path``, a persistent corpus index with an ``aar``
            sidecar (see above).
        top_n: number of nodes returned.
        lambda_: blend weight in [0, 1]; ``None`` keeps the saved value.
        mode: ``"mixed"`` or ``"reverse"``; ``None`` keeps the saved value. ``lambda_`` and
            ``mode`` override the saved :class:`rag_multihop.association.AssociationSettings`
            (checked by it).
        first_stage_margin: the lead association needs to take a rank from the incoming
            order; ``None`` lets the model choose it from how it was trained (0.02 for
            label-free corpus pairs, 0 for gold pairs).
        id_key: node metadata key holding the passage id the model was trained on; ``None``
            uses the node id.
        embed_model: embeds the query and nodes the model does not store (not serialised);
            ``None`` uses ``Settings.embed_model``.
    """

    model_path: str | None = Field(
        default=None, description="Directory of a saved rag-multihop association model."
    )
    index_path: str | None = Field(
        default=None, description="Corpus index with an aar sidecar (instead of model_path)."
    )
    top_n: int = Field(default=5, gt=0, description="Number of nodes to return.")
    lambda_: float | None = Field(
        default=None, description="Association weight in [0, 1]; None = saved value."
    )
    mode: str | None = Field(default=None, description="Scoring mode; None = saved value.")
    first_stage_margin: float | None = Field(
        default=None, description="Lead needed to leave the incoming order; None = automatic."
    )
    id_key: str | None = Field(
        default=None, description="Metadata key of the trained passage id; None = node id."
    )
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)
    _reranker: AssociationReranker | None = PrivateAttr(default=None)
    _snapshot: Any = PrivateAttr(default=None)
    _encoders: dict[int, Encoder] = PrivateAttr(default_factory=dict)
    _warned: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _check_settings(self) -> AssociationRerank:
        resolve_settings(
            AssociationSettings,
            None,
            lambda_=self.lambda_,
            mode=self.mode,
            first_stage_margin=self.first_stage_margin,
        )
        if (self.model_path is None) == (self.index_path is None):
            raise ValueError("AssociationRerank needs exactly one of model_path and index_path")
        return self

    @classmethod
    def class_name(cls) -> str:
        return "AssociationRerank"

    def _load(self) -> AssociationReranker:
        if self.index_path is not None:
            if self._snapshot is None or not self._snapshot.is_current():
                from rag_multihop.store import CorpusIndex

                self._snapshot = CorpusIndex(self.index_path).snapshot()
                self._reranker = AssociationReranker.from_index(
                    self._snapshot,
                    lambda_=self.lambda_,
                    mode=self.mode,
                    first_stage_margin=self.first_stage_margin,
                )
                self._encoders = {}
            assert self._reranker is not None
            return self._reranker
        if self._reranker is None:
            self._reranker = AssociationReranker.load(
                self.model_path,
                lambda_=self.lambda_,
                mode=self.mode,
                first_stage_margin=self.first_stage_margin,
            )
        return self._reranker

    def _encoder(
        self, embed_model: BaseEmbedding | None, reranker: AssociationReranker
    ) -> Encoder | None:
        """``embed_model`` as an encoder that remembers what it embedded, or None; checked
        once to be the model's encoder (``ValueError`` otherwise)."""
        if embed_model is None:
            return None
        key = id(embed_model)
        if key not in self._encoders:
            encoder = MemoEncoder(as_encoder(embed_model))
            reranker.check_encoder(encoder)
            self._encoders = {key: encoder}
        return self._encoders[key]

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("Missing query bundle: AssociationRerank needs the query.")
        if not nodes:
            return []
        reranker = self._load()
        embed_model = self.embed_model or settings_embed_model()
        encoder = self._encoder(embed_model, reranker)
        candidates = [
            node_to_candidate(
                n,
                id_key=self.id_key,
                signals={} if n.score is None else {RETRIEVAL_SCORE_KEY: float(n.score)},
            )
            for n in nodes
        ]
        if self.id_key is not None:
            check_one_node_per_id(candidates, self.id_key)
        query = Query(
            query_bundle.query_str, embedding=self._query_vector(query_bundle, embed_model)
        )
        with self.callback_manager.event(
            CBEventType.RERANKING,
            payload={
                EventPayload.NODES: nodes,
                EventPayload.MODEL_NAME: self.model_path or self.index_path,
                EventPayload.QUERY_STR: query_bundle.query_str,
                EventPayload.TOP_K: self.top_n,
            },
        ) as event:
            vectors = self._vectors(candidates, reranker, encoder)
            ranked = reranker.rerank(query, candidates, top_n=self.top_n, vectors=vectors)
            new_nodes = [candidate_to_node(c) for c in ranked]
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes

    @staticmethod
    def _query_vector(query_bundle: QueryBundle, embed_model: BaseEmbedding | None) -> Any:
        if embed_model is not None:
            return embed_model.get_query_embedding(query_bundle.query_str)
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        raise ValueError(
            "AssociationRerank needs an embed model for the query: pass embed_model=... or set "
            "Settings.embed_model (e.g. RagMultihopEmbedding() from "
            "llama_index.embeddings.rag_multihop, the bundled MiniLM the models are trained with)"
        )

    def _vectors(
        self, candidates: list[Candidate], reranker: AssociationReranker, encoder: Encoder | None
    ) -> dict[str, Any]:
        """Vectors of the nodes the model does not store: the store's, else the embed model's."""
        unknown = [c for c in candidates if not reranker.stores(c.id)]
        vectors: dict[str, Any] = {}
        for candidate in unknown:
            embedding = candidate.passage.metadata[NODE_KEY].embedding
            if embedding is not None:
                vectors[candidate.id] = embedding
        to_embed = [c for c in unknown if c.id not in vectors]
        if to_embed and encoder is not None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "AssociationRerank: %d of %d nodes are not in the association model and "
                    "came without an embedding (e.g. %r); embedding them with %s (remembered by "
                    "content hash). Train the model on these ids, or set id_key to the metadata "
                    "field holding the trained ids, to use the model's own vectors.",
                    len(to_embed),
                    len(candidates),
                    to_embed[0].id,
                    encoder.name,
                )
            embedded = encoder.encode([c.passage.embedding_text for c in to_embed])
            vectors.update(zip((c.id for c in to_embed), embedded, strict=True))
        return vectors
