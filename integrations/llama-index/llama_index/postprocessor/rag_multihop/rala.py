"""``RaLaRerank``: CoopRAG's RaLa (late interaction over encoder hidden states) as a node
postprocessor, LLM-free.

Nodes are rescored by the core :class:`rag_multihop.coop.RaLaReranker` against the query:
the mean over query tokens (weighted by their rarity among the nodes) of the best cosine over
each node's tokens, on the last layer of a sentence-transformers encoder
(:attr:`model`: a name or path; ``None`` is the bundled all-MiniLM-L6-v2). ``scoring`` picks
Eq. 4 (``"gap-weighted"``) or Eq. 3 (``"layer-gap"``) instead; every knob is a
:class:`rag_multihop.coop.RaLaSettings` field with the core's default and check. Node token
states are computed for the nodes at query time, or read from a persistent corpus index's
``rala`` sidecar with ``index_path`` (the core's ``PassageStates`` precomputes them too).
Returned nodes are copies with the RaLa score and the signals under
``metadata["rag_multihop_signals"]``.

Example:
    >>> from llama_index.postprocessor.rag_multihop import RaLaRerank
    >>> RaLaRerank(top_n=3).settings.scoring
    'maxsim'
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import candidate_to_node, node_to_candidate

from rag_multihop.coop import RaLaReranker, RaLaSettings
from rag_multihop.secrets import check_model_name
from rag_multihop.types import Query

_DEFAULTS = RaLaSettings()


class RaLaRerank(BaseNodePostprocessor):
    """Rerank nodes by RaLa (see the module docstring).

    Args:
        top_n: nodes returned.
        model: a sentence-transformers model name or path whose hidden states RaLa reads;
            ``None`` is the bundled all-MiniLM-L6-v2. An embedder without reachable hidden
            states (an API embedding) cannot be used.
        scoring, token_weighting, layer, buckets, seed, pooling, drop_punctuation:
            :class:`rag_multihop.coop.RaLaSettings` fields (see :attr:`settings`).
        index_path: a persistent corpus index with a ``rala`` sidecar: nodes it holds (by
            node id) are scored from their stored token states instead of being encoded at
            query time (reopened when a writer moves its version).
    """

    top_n: int = Field(default=5, gt=0, description="Number of nodes to return.")
    model: str | None = Field(default=None, description="sentence-transformers name or path.")
    scoring: str = Field(default=_DEFAULTS.scoring, description="maxsim, gap-weighted, layer-gap")
    token_weighting: str = Field(default=_DEFAULTS.token_weighting, description="pool-idf/uniform")
    layer: int | None = Field(default=_DEFAULTS.layer, description="Scoring layer; None = last.")
    buckets: int = Field(default=_DEFAULTS.buckets, description="Premature-layer buckets.")
    seed: int = Field(default=_DEFAULTS.seed, description="Seed of the premature-layer draw.")
    pooling: str | None = Field(default=_DEFAULTS.pooling, description="mean, cls or None.")
    drop_punctuation: bool = Field(default=_DEFAULTS.drop_punctuation, description="Drop it.")
    index_path: str | None = Field(
        default=None, description="Corpus index with a rala sidecar (stored token states)."
    )
    _core: RaLaReranker | None = PrivateAttr(default=None)
    _snapshot: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # checked before pydantic, whose errors would echo a key pasted here by mistake
        if data.get("model") is not None:
            check_model_name(data["model"], "model", kind="sentence-transformers model")
        super().__init__(**data)

    @model_validator(mode="after")
    def _check_settings(self) -> RaLaRerank:
        _ = self.settings
        return self

    @property
    def settings(self) -> RaLaSettings:
        """The core settings of these fields (built, so checked, by the core)."""
        return RaLaSettings(
            scoring=self.scoring,
            token_weighting=self.token_weighting,
            layer=self.layer,
            buckets=self.buckets,
            seed=self.seed,
            pooling=self.pooling,
            drop_punctuation=self.drop_punctuation,
        )

    @classmethod
    def class_name(cls) -> str:
        return "RaLaRerank"

    def reranker(self) -> RaLaReranker:
        """The core reranker (the encoder loads on its first use), reading the index's
        stored token states when ``index_path`` is set (reopened when its version moves)."""
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

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("Missing query bundle: RaLaRerank needs the query.")
        if not nodes:
            return []
        payload: dict = {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: self.model or "all-MiniLM-L6-v2",
            EventPayload.QUERY_STR: query_bundle.query_str,
            EventPayload.TOP_K: self.top_n,
        }
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            ranked = self.reranker().rerank(
                Query(query_bundle.query_str), [node_to_candidate(n) for n in nodes], self.top_n
            )
            new_nodes = [candidate_to_node(c) for c in ranked]
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes
