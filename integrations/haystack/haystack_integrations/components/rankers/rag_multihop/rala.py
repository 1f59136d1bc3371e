"""``RaLaRanker``: CoopRAG's RaLa (late interaction over encoder hidden states) as a Haystack
ranker, LLM-free.

Documents are rescored by the core :class:`rag_multihop.coop.RaLaReranker` against the query:
the mean over query tokens (weighted by their rarity among the documents) of the best cosine
over each document's tokens, on the last layer of a sentence-transformers encoder (``model``:
a name or path; ``None`` is the bundled all-MiniLM-L6-v2). ``scoring`` picks Eq. 4
(``"gap-weighted"``) or Eq. 3 (``"layer-gap"``) instead; every knob is a
:class:`rag_multihop.coop.RaLaSettings` field with the core's default and check. Documents
come back as new objects with the RaLa score and the signals in
``meta["rag_multihop_signals"]``.

Example:
    >>> RaLaRanker(top_k=3).to_dict()["init_parameters"]["scoring"]
    'maxsim'
"""

from __future__ import annotations

import asyncio
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import check_encoder_name, rerank_documents

from rag_multihop.coop import RaLaReranker, RaLaSettings
from rag_multihop.validation import check_positive_int

_DEFAULTS = RaLaSettings()


@component
class RaLaRanker:
    """Rerank documents by RaLa (see the module docstring).

    Args:
        top_k: documents returned (``run(top_k=...)`` overrides it).
        model: a sentence-transformers model name or path whose hidden states RaLa reads;
            ``None`` is the bundled all-MiniLM-L6-v2.
        scoring, token_weighting, layer, buckets, seed, pooling, drop_punctuation:
            :class:`rag_multihop.coop.RaLaSettings` fields, kept as :attr:`settings`.
        index_path: a persistent corpus index with a ``rala`` sidecar: documents it holds
            (by id) are scored from their stored token states instead of being encoded at
            query time (reopened when a writer moves its version).
    """

    def __init__(
        self,
        *,
        top_k: int = 10,
        model: str | None = None,
        scoring: str = _DEFAULTS.scoring,
        token_weighting: str = _DEFAULTS.token_weighting,
        layer: int | None = _DEFAULTS.layer,
        buckets: int = _DEFAULTS.buckets,
        seed: int = _DEFAULTS.seed,
        pooling: str | None = _DEFAULTS.pooling,
        drop_punctuation: bool = _DEFAULTS.drop_punctuation,
        index_path: str | None = None,
    ) -> None:
        self.top_k = check_positive_int(top_k, "top_k")
        self.model = check_encoder_name(model)
        self.settings = RaLaSettings(
            scoring=scoring,
            token_weighting=token_weighting,
            layer=layer,
            buckets=buckets,
            seed=seed,
            pooling=pooling,
            drop_punctuation=drop_punctuation,
        )
        self.index_path = None if index_path is None else str(index_path)
        self._core: RaLaReranker | None = None
        self._snapshot: Any = None

    def warm_up(self) -> None:
        """Load the encoder and learn its depth (once)."""
        _ = self._ready().layout

    def _ready(self) -> RaLaReranker:
        if self._core is None:
            from rag_multihop.encoders import load_encoder

            self._core = RaLaReranker(load_encoder(self.model), settings=self.settings)
        if self.index_path is not None and (
            self._snapshot is None or not self._snapshot.is_current()
        ):
            from rag_multihop.coop.indexed import IndexedStates
            from rag_multihop.store import CorpusIndex

            self._snapshot = CorpusIndex(self.index_path).snapshot()
            self._core.store = IndexedStates.open(self._snapshot)
        return self._core

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return default_to_dict(
            self,
            top_k=self.top_k,
            model=self.model,
            scoring=s.scoring,
            token_weighting=s.token_weighting,
            layer=s.layer,
            buckets=s.buckets,
            seed=s.seed,
            pooling=s.pooling,
            drop_punctuation=s.drop_punctuation,
            index_path=self.index_path,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaLaRanker:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The ``top_k`` best documents by RaLa, as new ``Document`` objects."""
        limit = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        return {"documents": rerank_documents(self._ready(), query, documents, limit)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The async twin of :meth:`run` (the encoder runs in a worker thread)."""
        return await asyncio.to_thread(self.run, query, documents, top_k)
