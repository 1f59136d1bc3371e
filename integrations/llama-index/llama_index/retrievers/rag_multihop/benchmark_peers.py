"""Benchmark peers: dense + BM25 fused by LlamaIndex's own ``QueryFusionRetriever``.

Importing this module registers three methods with rag-multihop's benchmark (it is the
``llama_index`` entry of the ``rag_multihop.methods`` entry-point group):

- ``li-fusion-rrf``: ``mode="reciprocal_rerank"``, score = sum over lists of 1 / (rank0 + 60);
- ``li-fusion-relative``: ``mode="relative_score"``, per-list min-max scaling, weighted sum;
- ``li-fusion-dbsf``: ``mode="dist_based_score"``, per-list scaling to mean +/- 3 std, weighted sum.

The two children are LlamaIndex ``BaseRetriever`` subclasses wrapping the benchmark's shared
dense and BM25 retrievers (``context.dense``, ``context.bm25``); the fusion itself runs in
LlamaIndex, unchanged (``num_queries=1``, so no query generation; ``llm=MockLLM()`` is never
called). Each child returns :data:`DEFAULT_CHILD_K` candidates before fusion, overridable with
the benchmark option ``peer_child_k`` (``rag-multihop bench --option peer_child_k=50``). The
child depth is independent of the ``k`` asked for, so the fused ranking for ``k=5`` is the
prefix of the one for ``k=20``; when ``k`` is larger than the fused pool fewer than ``k``
candidates come back.

Returned candidates carry the signals ``"fused"`` (the LlamaIndex score) and ``"dense"`` /
``"bm25"`` (the child score, for the children that returned the passage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from llama_index.core import __version__ as llama_index_version
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import (
    candidate_to_node_with_score,
    node_to_candidate,
)

from rag_multihop.corpus import Corpus
from rag_multihop.eval.registry import DEFAULT_PEER_CHILD_K as DEFAULT_CHILD_K
from rag_multihop.eval.registry import PEER_CHILD_K_OPTION as CHILD_K_OPTION
from rag_multihop.eval.registry import BenchContext, register_method
from rag_multihop.eval.registry import peer_child_k as child_k_from_options
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

FUSION_PEERS: dict[str, tuple[str, str]] = {
    "li-fusion-rrf": (
        "reciprocal_rerank",
        "LlamaIndex QueryFusionRetriever, reciprocal_rerank (RRF, k=60) of dense + BM25",
    ),
    "li-fusion-relative": (
        "relative_score",
        "LlamaIndex QueryFusionRetriever, relative_score (min-max, summed) of dense + BM25",
    ),
    "li-fusion-dbsf": (
        "dist_based_score",
        "LlamaIndex QueryFusionRetriever, dist_based_score (mean +/- 3 std, summed) "
        "of dense + BM25",
    ),
}
"""Peer name -> (``QueryFusionRetriever`` mode, description)."""


class _CoreRetriever(BaseRetriever):
    """A LlamaIndex retriever over a rag-multihop :class:`Retriever`.

    Uses ``QueryBundle.embedding`` as the query's precomputed embedding when present. Every
    child score it returns is also written to ``record[passage_id][signal]`` so the peer can
    report child scores after LlamaIndex has overwritten them with fused ones.
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        depth: int,
        signal: str,
        record: dict[str, dict[str, float]],
    ) -> None:
        self._retriever = retriever
        self._depth = depth
        self._signal = signal
        self._record = record
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = (
            None
            if query_bundle.embedding is None
            else np.asarray(query_bundle.embedding, dtype=np.float32)
        )
        query = Query(query_bundle.query_str, embedding=embedding)
        candidates = self._retriever.retrieve(query, k=self._depth)
        for candidate in candidates:
            self._record.setdefault(candidate.id, {})[self._signal] = float(candidate.score)
        return [candidate_to_node_with_score(c) for c in candidates]


class LlamaIndexFusionPeer:
    """Dense + BM25 fused by ``QueryFusionRetriever`` in one ``mode``; a core Retriever.

    Args:
        corpus: the corpus both children retrieve from (fused nodes are looked up in it).
        dense: the dense retriever (signal ``"dense"``).
        bm25: the lexical retriever (signal ``"bm25"``).
        mode: a LlamaIndex ``FUSION_MODES`` value.
        child_k: candidates each child returns before fusion.
    """

    def __init__(
        self,
        corpus: Corpus,
        dense: Retriever,
        bm25: Retriever,
        *,
        mode: str,
        child_k: int = DEFAULT_CHILD_K,
    ) -> None:
        self.corpus = corpus
        self.dense = dense
        self.bm25 = bm25
        self.mode = mode
        self.child_k = check_positive_int(child_k, "child_k")
        self._llm = MockLLM()

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best fused candidates for ``query``, in LlamaIndex's order (rank 1 first)."""
        check_positive_int(k, "k")
        # Built per call (about 0.25 ms) so each query records its own child scores: LlamaIndex
        # overwrites the children's NodeWithScore.score with the fused score in place.
        record: dict[str, dict[str, float]] = {}
        children: list[BaseRetriever] = [
            _CoreRetriever(self.dense, depth=self.child_k, signal="dense", record=record),
            _CoreRetriever(self.bm25, depth=self.child_k, signal="bm25", record=record),
        ]
        fusion = QueryFusionRetriever(
            children,
            llm=self._llm,
            mode=self.mode,  # type: ignore[arg-type]  # FUSION_MODES is a str Enum
            similarity_top_k=k,
            num_queries=1,
            use_async=False,
        )
        embedding = None if query.embedding is None else np.asarray(query.embedding).tolist()
        fused = fusion.retrieve(QueryBundle(query_str=query.text, embedding=embedding))
        return [
            node_to_candidate(
                node,
                self.corpus,
                rank=rank,
                signals={"fused": node.get_score(), **record.get(node.node.node_id, {})},
            )
            for rank, node in enumerate(fused, start=1)
        ]

    def bench_extras(self) -> dict[str, Any]:
        """Settings reported next to the benchmark numbers."""
        return {
            "framework": f"llama-index-core {llama_index_version}",
            "mode": self.mode,
            CHILD_K_OPTION: self.child_k,
        }


def _factory(mode: str) -> Callable[[BenchContext], LlamaIndexFusionPeer]:
    def build(context: BenchContext) -> LlamaIndexFusionPeer:
        return LlamaIndexFusionPeer(
            context.dataset.corpus,
            context.dense,
            context.bm25,
            mode=mode,
            child_k=child_k_from_options(context.options),
        )

    build.__doc__ = f"Build the QueryFusionRetriever peer in mode {mode!r}."
    return build


for _name, (_mode, _description) in FUSION_PEERS.items():
    register_method(_name, _description, family="peer")(_factory(_mode))
