"""AAR (association-augmented reranking) as a Haystack ranker component.

``AssociationRanker`` translates documents into rag-multihop candidates (``Document.id`` =
passage id, text and title by the package's one rule, see
:mod:`haystack_integrations.common.rag_multihop.convert`), calls
:class:`rag_multihop.association.AssociationReranker` and returns new documents
(``dataclasses.replace``; inputs are never mutated) with the blended AAR score and the signals
``association``, ``cosine`` and ``retrieval_score`` (the incoming score) in
``meta["rag_multihop_signals"]``, next to any earlier rag-multihop signals.

Which passage a document is: by default ``Document.id``; with ``id_key`` the value of
``meta[id_key]`` (train the model on those ids, e.g. a document id kept as metadata, when the
store assigns its own ids such as UUIDs).

Vectors: a document the saved model stores uses the stored vector and f(p); any other uses
``Document.embedding`` when set (Chroma's and other stores' embedding retrievers return it),
else the encoder embeds ``title + "\n" + content``, remembered by content hash so each text is
embedded once; the first such fallback logs a warning (it is slower, and the model has not
seen the passage). The query vector is the
``query_embedding`` input when connected, else the encoder's embedding of ``query``. The
encoder is ``embedder``: a Haystack text or document embedder component (the pipeline's own,
so its model loads once), a sentence-transformers model name, or ``None`` for the bundled
all-MiniLM-L6-v2; it must embed like the encoder the association model was trained with.
Serialisation stores the model path and the embedder's settings, never the weights.

Example:
    >>> from haystack_integrations.components.rankers.rag_multihop import AssociationRanker
    >>> ranker = AssociationRanker(model_path="models/aar-demo", top_k=3)
    >>> ranker.to_dict()["init_parameters"]["model_path"]
    'models/aar-demo'
    >>> pipeline.add_component("aar", ranker)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import (
    as_encoder,
    candidate_to_document,
    check_embedder,
    document_to_candidate,
    embedder_to_dict,
)

from rag_multihop._settings import resolve_settings
from rag_multihop.association import AssociationReranker
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.encoders import MemoEncoder
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

RETRIEVAL_SCORE_KEY = "retrieval_score"
"""Signal holding the score a document had before reranking."""


@component
class AssociationRanker:
    """Rank documents by ``(1 − λ)·cos(q, d) + λ·a(q, d)`` with a trained association model.

    Args:
        model_path: directory of a saved model (``rag-multihop aar train`` or
            ``AssociationReranker.save``); loaded in :meth:`warm_up`.
        index_path: instead of ``model_path``, a persistent corpus index with an ``aar``
            sidecar: the model, every passage's vector and f(p) read from it (document ids
            are the index's passage ids; reopened when a writer moves its version).
        top_k: documents returned (a ``run`` value overrides it).
        lambda_: blend weight in [0, 1]; ``None`` keeps the saved value.
        mode: ``"mixed"`` or ``"reverse"``; ``None`` keeps the saved value. ``lambda_`` and
            ``mode`` override the saved :class:`rag_multihop.association.AssociationSettings`
            (checked by it).
        first_stage_margin: the lead association needs to take a rank from the incoming
            order; ``None`` lets the model choose it from how it was trained (0.02 for
            label-free corpus pairs, 0 for gold pairs).
        embedder: embeds queries and unstored documents: a Haystack text or document embedder
            component, a sentence-transformers model name or path, or ``None`` for the
            bundled all-MiniLM-L6-v2.
        id_key: ``meta`` key holding the passage id the model was trained on; ``None`` uses
            ``Document.id``.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        index_path: str | None = None,
        top_k: int = 10,
        lambda_: float | None = None,
        mode: str | None = None,
        first_stage_margin: float | None = None,
        embedder: Any = None,
        id_key: str | None = None,
    ) -> None:
        if (model_path is None) == (index_path is None):
            raise ValueError("AssociationRanker needs exactly one of model_path and index_path")
        self.model_path = None if model_path is None else str(model_path)
        self.index_path = None if index_path is None else str(index_path)
        self.top_k = check_positive_int(top_k, "top_k")
        resolve_settings(  # checks them
            AssociationSettings,
            None,
            lambda_=lambda_,
            mode=mode,
            first_stage_margin=first_stage_margin,
        )
        self.lambda_ = lambda_
        self.mode = mode
        self.first_stage_margin = first_stage_margin
        self.embedder = check_embedder(embedder)
        self.id_key = id_key
        self._reranker: AssociationReranker | None = None
        self._snapshot: Any = None
        self._warned = False

    def warm_up(self) -> None:
        """Load the model and its encoder (idempotent)."""
        self._loaded()

    def _loaded(self) -> AssociationReranker:
        if self.index_path is not None:
            if self._snapshot is None or not self._snapshot.is_current():
                from rag_multihop.store import CorpusIndex

                self._snapshot = CorpusIndex(self.index_path).snapshot()
                self._reranker = AssociationReranker.from_index(
                    self._snapshot,
                    encoder=MemoEncoder(as_encoder(self.embedder)),
                    lambda_=self.lambda_,
                    mode=self.mode,
                    first_stage_margin=self.first_stage_margin,
                )
            assert self._reranker is not None
            return self._reranker
        if self._reranker is None:
            assert self.model_path is not None
            self._reranker = AssociationReranker.load(
                self.model_path,
                encoder=MemoEncoder(as_encoder(self.embedder)),
                lambda_=self.lambda_,
                mode=self.mode,
                first_stage_margin=self.first_stage_margin,
            )
        return self._reranker

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            model_path=self.model_path,
            index_path=self.index_path,
            top_k=self.top_k,
            lambda_=self.lambda_,
            mode=self.mode,
            first_stage_margin=self.first_stage_margin,
            embedder=embedder_to_dict(self.embedder),
            id_key=self.id_key,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssociationRanker:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        query_embedding: list[float] | None = None,
    ) -> dict[str, list[Document]]:
        """The ``top_k`` best documents by AAR score, as new ``Document`` objects."""
        top_k = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        if not documents:
            return {"documents": []}
        reranker = self._loaded()
        candidates = [
            document_to_candidate(
                doc,
                signals={} if doc.score is None else {RETRIEVAL_SCORE_KEY: float(doc.score)},
                id_key=self.id_key,
            )
            for doc in documents
        ]
        self._check_one_document_per_id(candidates, documents)
        vectors = {
            c.id: doc.embedding
            for c, doc in zip(candidates, documents, strict=True)
            if doc.embedding is not None
        }
        self._warn_once_when_embedding(candidates, vectors, reranker)
        ranked = reranker.rerank(
            Query(query, embedding=query_embedding), candidates, top_n=top_k, vectors=vectors
        )
        return {"documents": [candidate_to_document(c) for c in ranked]}

    def _check_one_document_per_id(
        self, candidates: list[Candidate], documents: list[Document]
    ) -> None:
        """With ``id_key``: ``ValueError`` when documents share a passage id (the core would
        name only the id, not the documents or the key)."""
        if self.id_key is None:
            return
        sharing: dict[str, list[str]] = {}
        for candidate, document in zip(candidates, documents, strict=True):
            sharing.setdefault(candidate.id, []).append(document.id)
        for value, ids in sharing.items():
            if len(ids) > 1:
                raise ValueError(
                    f"documents {ids} share meta[{self.id_key!r}] = {value!r}: the association "
                    "model scores one passage per id; give chunks their own ids under "
                    f"{self.id_key!r}, or rerank one document per id"
                )

    def _warn_once_when_embedding(
        self, candidates: list[Candidate], vectors: dict[str, Any], reranker: AssociationReranker
    ) -> None:
        if self._warned:
            return
        to_embed = [c.id for c in candidates if c.id not in vectors and not reranker.stores(c.id)]
        if to_embed:
            self._warned = True
            logger.warning(
                "AssociationRanker: %d of %d documents are not in the association model and "
                "came without an embedding (e.g. %r); embedding them with %s (remembered by "
                "content hash). Train the model on these ids, or set id_key to the meta field "
                "holding the trained ids, to use the model's own vectors.",
                len(to_embed),
                len(candidates),
                to_embed[0],
                reranker.encoder.name if reranker.encoder is not None else "the encoder",
            )

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        query_embedding: list[float] | None = None,
    ) -> dict[str, list[Document]]:
        """:meth:`run` in a worker thread (embedding and scoring are CPU-bound)."""
        return await asyncio.to_thread(self.run, query, documents, top_k, query_embedding)
