"""LlamaIndex peers: dense + BM25 fused by LlamaIndex's own ``QueryFusionRetriever``.

:mod:`rag_multihop.eval.methods.peers` registers three methods that build
:class:`LlamaIndexFusionPeer` (importing this module, and LlamaIndex, only then):

- ``li-fusion-rrf``: ``mode="reciprocal_rerank"``, score = sum over lists of 1 / (rank0 + 60);
- ``li-fusion-relative``: ``mode="relative_score"``, per-list min-max scaling, weighted sum;
- ``li-fusion-dbsf``: ``mode="dist_based_score"``, per-list scaling to mean +/- 3 std, weighted sum.

The two children are LlamaIndex ``BaseRetriever`` subclasses wrapping the benchmark's shared
dense and BM25 retrievers (``context.dense``, ``context.bm25``); the fusion itself runs in
LlamaIndex, unchanged (``num_queries=1``, so no query generation; ``llm=MockLLM()`` is never
called). Each child returns ``peer_child_k`` candidates before fusion (default
:data:`~rag_multihop.eval.registry.DEFAULT_PEER_CHILD_K`). The child depth is independent of
the ``k`` asked for, so the fused ranking for ``k=5`` is the prefix of the one for ``k=20``;
when ``k`` is larger than the fused pool fewer than ``k`` candidates come back.

Returned candidates carry the signals ``"fused"`` (the LlamaIndex score) and ``"dense"`` /
``"bm25"`` (the child score, for the children that returned the passage).

Nodes are built with node id = passage id, text = passage text, the title in
``metadata["title"]`` and the id in ``metadata["passage_id"]`` (hidden from the LLM and the
embedder), so ``QueryFusionRetriever``'s deduplication by ``node.hash`` (sha256 of text and
metadata) merges exactly the same passage; fused nodes are looked up in the corpus by id.

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> p = Passage("p1", "Paris is the capital of France.", title="Paris")
    >>> node = passage_to_node(p)
    >>> node.node_id, node.text, node.metadata["title"]
    ('p1', 'Paris is the capital of France.', 'Paris')
    >>> c = node_to_candidate(NodeWithScore(node=node, score=0.5), Corpus([p]), rank=1)
    >>> (c.passage is p, c.score, c.rank)
    (True, 0.5, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from llama_index.core import __version__ as llama_index_version
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_multihop.corpus import Corpus
from rag_multihop.eval.registry import DEFAULT_PEER_CHILD_K, PEER_CHILD_K_OPTION
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int

PASSAGE_ID_KEY = "passage_id"
"""Node metadata key holding the passage id (hidden from the LLM and the embedder)."""

TITLE_KEY = "title"
"""Node metadata key holding the passage title (shown to the LLM and the embedder)."""


def passage_to_node(passage: Passage) -> TextNode:
    """A new ``TextNode`` for ``passage``: same id and text, title and metadata in ``metadata``.

    The passage's own metadata comes first; ``title`` (when non-empty) and
    :data:`PASSAGE_ID_KEY` are set last and win over same-named passage metadata keys.
    """
    metadata: dict[str, object] = dict(passage.metadata)
    if passage.title:
        metadata[TITLE_KEY] = passage.title
    metadata[PASSAGE_ID_KEY] = passage.id
    return TextNode(
        id_=passage.id,
        text=passage.text,
        metadata=metadata,
        excluded_llm_metadata_keys=[PASSAGE_ID_KEY],
        excluded_embed_metadata_keys=[PASSAGE_ID_KEY],
    )


def candidate_to_node_with_score(candidate: Candidate) -> NodeWithScore:
    """A new ``NodeWithScore`` for ``candidate`` (its passage as a node, its score)."""
    return NodeWithScore(node=passage_to_node(candidate.passage), score=float(candidate.score))


def node_to_candidate(
    node_with_score: NodeWithScore,
    corpus: Corpus,
    *,
    rank: int = 0,
    signals: Mapping[str, float] | None = None,
) -> Candidate:
    """The :class:`Candidate` for a scored node, its passage looked up in ``corpus`` by node id.

    A node without a score gets score 0.0 (LlamaIndex's ``get_score`` convention).

    Raises:
        KeyError: the node id is not a passage id of ``corpus``.
    """
    node_id = node_with_score.node.node_id
    if node_id not in corpus:
        raise KeyError(
            f"node id {node_id!r} is not a passage id of the corpus; nodes given to rag-multihop "
            "must come from passage_to_node (node id = passage id)"
        )
    return Candidate(
        passage=corpus[node_id],
        score=float(node_with_score.get_score()),
        rank=rank,
        signals=dict(signals or {}),
    )


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
        child_k: int = DEFAULT_PEER_CHILD_K,
    ) -> None:
        self.corpus = corpus
        self.dense = dense
        self.bm25 = bm25
        self.mode = mode
        self.child_k = check_positive_int(child_k, "child_k")
        self._llm = MockLLM()

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best fused candidates for ``query``, in LlamaIndex's order (rank 1 first)."""
        k = check_positive_int(k, "k")
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
            PEER_CHILD_K_OPTION: self.child_k,
        }
