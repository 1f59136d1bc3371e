"""``PITFusionRetriever``: calibrated fusion of any LlamaIndex retrievers.

A drop-in for ``QueryFusionRetriever`` (same first arguments: ``retrievers``,
``similarity_top_k``, ``retriever_weights``, ``verbose``, ``callback_manager``) that fuses
with rag-multihop's :func:`~rag_multihop.fusion.fuse_lists` (PIT calibration + Boltzmann
fusion by default) instead of RRF / relative score. It generates no extra queries (no LLM).

What the adapter does, and only that:

- asks every child for its nodes (``aretrieve`` concurrently in async code, so it is as
  async as its children);
- translates each child's list to ids and scores: the id is ``node.node_id`` (graph and
  vector retrievers over the same nodes then merge, unlike ``QueryFusionRetriever``'s
  content hash); a node repeated in one child's list keeps its best score; a node without a
  score is an error;
- calls the core and returns new ``NodeWithScore`` objects (the first-seen node, copied, with
  the fused score); each node's ``metadata["rag_multihop_signals"]`` holds every system's raw
  and calibrated score (hidden from the LLM and the embedder). Children's nodes are not mutated.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> class Fixed(BaseRetriever):
    ...     def __init__(self, scored):
    ...         self.scored = scored
    ...         super().__init__()
    ...     def _retrieve(self, query_bundle):
    ...         return [NodeWithScore(node=TextNode(id_=i), score=s) for i, s in self.scored]
    >>> fusion = PITFusionRetriever(
    ...     [Fixed([("a", 0.9), ("b", 0.2)]), Fixed([("b", 7.0), ("c", 1.0)])],
    ...     similarity_top_k=2, fusion="linear",
    ... )
    >>> [(n.node.node_id, round(n.score, 3)) for n in fusion.retrieve("q")]
    [('b', 0.75), ('a', 0.5)]
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import with_signals

from rag_multihop.fusion import check_settings, fuse_lists
from rag_multihop.fusion.core import PoolCap, check_pool_cap, check_weights
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


def _scored_list(index: int, nodes: Sequence[NodeWithScore]) -> tuple[list[str], list[float]]:
    best: dict[str, float] = {}
    for item in nodes:
        if item.score is None:
            raise ValueError(
                f"retriever {index} returned node {item.node.node_id!r} without a score; "
                "calibrated fusion needs every child to score its nodes"
            )
        node_id = item.node.node_id
        best[node_id] = max(best.get(node_id, float("-inf")), float(item.score))
    return list(best), list(best.values())


class PITFusionRetriever(BaseRetriever):
    """Fuse any ``BaseRetriever``s with calibrated fusion (see the module docstring).

    Args:
        retrievers: two or more LlamaIndex retrievers.
        similarity_top_k: fused nodes returned.
        retriever_weights: one non-negative weight per retriever (normalised); uniform when
            ``None``.
        names: system names used in the signals (default ``retriever_0``, ``retriever_1``, ...).
        calibration, fusion: rag-multihop registry names (``pit``/``boltzmann`` default).
        pool_cap: keep only each child's best ``cap`` nodes (one int, or one per retriever).
        consensus_beta: boost for nodes found by several retrievers.
        params: fusion parameters (``epsilon``, ``c`` for boltzmann; ``k`` for rrf).
    """

    def __init__(
        self,
        retrievers: Sequence[BaseRetriever],
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        retriever_weights: Sequence[float] | None = None,
        verbose: bool = False,
        callback_manager: CallbackManager | None = None,
        *,
        names: Sequence[str] | None = None,
        calibration: str = "pit",
        fusion: str = "boltzmann",
        pool_cap: PoolCap = None,
        consensus_beta: float = 0.0,
        params: Mapping[str, float] | None = None,
    ) -> None:
        self._retrievers = list(retrievers)
        if len(self._retrievers) < 2:
            raise ValueError(
                f"PITFusionRetriever needs at least 2 retrievers, got {len(self._retrievers)}"
            )
        self._names = (
            [f"retriever_{i}" for i in range(len(self._retrievers))]
            if names is None
            else list(names)
        )
        if len(self._names) != len(self._retrievers) or len(set(self._names)) != len(self._names):
            raise ValueError(
                f"names must be {len(self._retrievers)} distinct strings, one per retriever, "
                f"got {self._names}"
            )
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        self._weights = None if retriever_weights is None else list(retriever_weights)
        check_weights(self._weights, len(self._retrievers))
        self._pool_cap = pool_cap
        check_pool_cap(pool_cap, len(self._retrievers))
        check_settings(calibration, fusion, consensus_beta, params)
        self._calibration = calibration
        self._fusion = fusion
        self._consensus_beta = consensus_beta
        self._params = dict(params or {})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _fuse(self, results: Sequence[Sequence[NodeWithScore]]) -> list[NodeWithScore]:
        nodes: dict[str, BaseNode] = {}
        for found in results:
            for item in found:
                nodes.setdefault(item.node.node_id, item.node)
        fused = fuse_lists(
            [_scored_list(i, found) for i, found in enumerate(results)],
            calibration=self._calibration,
            fusion=self._fusion,
            weights=self._weights,
            pool_cap=self._pool_cap,
            consensus_beta=self._consensus_beta,
            params=self._params,
        )
        return [
            NodeWithScore(
                node=with_signals(nodes[node_id], fused.signals(row, self._names)),
                score=float(fused.scores[row]),
            )
            for row, node_id in enumerate(fused.ids[: self.similarity_top_k])
        ]

    @staticmethod
    def _bundle(query_bundle: QueryBundle) -> QueryBundle:
        # children may write an embedding into the bundle: give each its own copy
        return QueryBundle(
            query_str=query_bundle.query_str,
            image_path=query_bundle.image_path,
            custom_embedding_strs=query_bundle.custom_embedding_strs,
            embedding=query_bundle.embedding,
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = [r.retrieve(self._bundle(query_bundle)) for r in self._retrievers]
        return self._fuse(results)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = await asyncio.gather(
            *(r.aretrieve(self._bundle(query_bundle)) for r in self._retrievers)
        )
        return self._fuse(results)
