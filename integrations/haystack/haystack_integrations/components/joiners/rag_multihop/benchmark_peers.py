"""Benchmark peers: dense + BM25 fused by Haystack's own ``DocumentJoiner``.

Importing this module registers two methods with rag-multihop's benchmark (it is the
``haystack`` entry of the ``rag_multihop.methods`` entry-point group):

- ``hs-joiner-rrf``: ``join_mode="reciprocal_rank_fusion"``, score = sum over lists of
  w * 61 / (61 + rank0) with w = 1/2;
- ``hs-joiner-dbsf``: ``join_mode="distribution_based_rank_fusion"``, per-list scaling to
  mean +/- 3 std, then the maximum over lists.

The benchmark's shared dense and BM25 retrievers (``context.dense``, ``context.bm25``) each
return :data:`DEFAULT_CHILD_K` candidates (benchmark option ``peer_child_k``), converted to
scored ``Document``s; ``DocumentJoiner.run`` fuses them, unchanged, with the lists in the
order ``[dense, bm25]`` (the order the LlamaIndex peers use). The joiner is called directly
rather than through a two-input ``Pipeline``: a pipeline hands the variadic lists over in
alphabetical order of the sender names, which changes how score ties are broken, and adds
tens of milliseconds per query (see ``docs/benchmarks.md``). The child depth is independent of the
``k`` asked for, so the fused ranking for ``k=5`` is the prefix of the one for ``k=20``; when
``k`` is larger than the fused pool fewer than ``k`` candidates come back.

Returned candidates carry the signals ``"fused"`` (the joiner score) and ``"dense"`` /
``"bm25"`` (the child score, for the children that returned the passage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haystack import __version__ as haystack_version
from haystack.components.joiners import DocumentJoiner
from haystack_integrations.components.joiners.rag_multihop._convert import (
    candidate_to_document,
    document_to_candidate,
)

from rag_multihop.corpus import Corpus
from rag_multihop.eval.registry import DEFAULT_PEER_CHILD_K as DEFAULT_CHILD_K
from rag_multihop.eval.registry import PEER_CHILD_K_OPTION as CHILD_K_OPTION
from rag_multihop.eval.registry import BenchContext, register_method
from rag_multihop.eval.registry import peer_child_k as child_k_from_options
from rag_multihop.protocols import Retriever
from rag_multihop.types import Candidate, Query
from rag_multihop.validation import check_positive_int

JOINER_PEERS: dict[str, tuple[str, str]] = {
    "hs-joiner-rrf": (
        "reciprocal_rank_fusion",
        "Haystack DocumentJoiner, reciprocal_rank_fusion (k=61, mean of lists) of dense + BM25",
    ),
    "hs-joiner-dbsf": (
        "distribution_based_rank_fusion",
        "Haystack DocumentJoiner, distribution_based_rank_fusion (mean +/- 3 std, max over "
        "lists) of dense + BM25",
    ),
}
"""Peer name -> (``DocumentJoiner`` join mode, description)."""


class HaystackJoinerPeer:
    """Dense + BM25 fused by ``DocumentJoiner`` in one ``join_mode``; a core Retriever.

    Args:
        corpus: the corpus both children retrieve from (joined documents are looked up in it).
        dense: the dense retriever (signal ``"dense"``).
        bm25: the lexical retriever (signal ``"bm25"``).
        join_mode: a Haystack ``JoinMode`` value.
        child_k: candidates each child returns before fusion.
    """

    def __init__(
        self,
        corpus: Corpus,
        dense: Retriever,
        bm25: Retriever,
        *,
        join_mode: str,
        child_k: int = DEFAULT_CHILD_K,
    ) -> None:
        self.corpus = corpus
        self.dense = dense
        self.bm25 = bm25
        self.join_mode = join_mode
        self.child_k = check_positive_int(child_k, "child_k")
        self._joiner = DocumentJoiner(join_mode=join_mode)

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        """The ``k`` best fused candidates for ``query``, in the joiner's order (rank 1 first)."""
        check_positive_int(k, "k")
        children = {
            "dense": self.dense.retrieve(query, k=self.child_k),
            "bm25": self.bm25.retrieve(query, k=self.child_k),
        }
        record: dict[str, dict[str, float]] = {}
        for signal, candidates in children.items():
            for candidate in candidates:
                record.setdefault(candidate.id, {})[signal] = float(candidate.score)
        lists = [[candidate_to_document(c) for c in found] for found in children.values()]
        joined = self._joiner.run(documents=lists, top_k=k)["documents"]
        return [
            document_to_candidate(
                doc,
                self.corpus,
                rank=rank,
                signals={"fused": 0.0 if doc.score is None else doc.score, **record[doc.id]},
            )
            for rank, doc in enumerate(joined, start=1)
        ]

    def bench_extras(self) -> dict[str, Any]:
        """Settings reported next to the benchmark numbers."""
        return {
            "framework": f"haystack-ai {haystack_version}",
            "join_mode": self.join_mode,
            CHILD_K_OPTION: self.child_k,
        }


def _factory(join_mode: str) -> Callable[[BenchContext], HaystackJoinerPeer]:
    def build(context: BenchContext) -> HaystackJoinerPeer:
        return HaystackJoinerPeer(
            context.dataset.corpus,
            context.dense,
            context.bm25,
            join_mode=join_mode,
            child_k=child_k_from_options(context.options),
        )

    build.__doc__ = f"Build the DocumentJoiner peer in join mode {join_mode!r}."
    return build


for _name, (_mode, _description) in JOINER_PEERS.items():
    register_method(_name, _description, family="peer")(_factory(_mode))
