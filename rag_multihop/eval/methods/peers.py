"""Benchmark factories of the framework peers: ``li-fusion-*`` (LlamaIndex's
``QueryFusionRetriever``) and ``hs-joiner-*`` (Haystack's ``DocumentJoiner``) over the shared
dense and BM25 retrievers.

Registering them imports neither framework: each factory imports its module of
:mod:`rag_multihop.eval.peers` (and the framework with it) when the peer is built, by a
deferred import that tools see. Without the
framework installed, building the peer raises ``ImportError`` naming the install command.

Example:
    >>> from rag_multihop.eval.methods import available_methods
    >>> sorted(n for n, m in available_methods().items() if n.startswith(("li-", "hs-")))
    ['hs-joiner-dbsf', 'hs-joiner-rrf', 'li-fusion-dbsf', 'li-fusion-relative', 'li-fusion-rrf']
"""

from __future__ import annotations

from collections.abc import Callable

from rag_multihop.eval.context import BenchContext
from rag_multihop.eval.registry import peer_child_k, register_method
from rag_multihop.protocols import Retriever

LLAMA_INDEX_PEERS: dict[str, tuple[str, str]] = {
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

HAYSTACK_PEERS: dict[str, tuple[str, str]] = {
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


def _missing(framework: str, exc: ImportError) -> ImportError:
    return ImportError(
        f"this benchmark peer runs {framework}, which is not installed ({exc}); install it "
        "with: pip install 'rag-multihop[peers]'"
    )


def _llama_index(mode: str) -> Callable[[BenchContext], Retriever]:
    def build(context: BenchContext) -> Retriever:
        try:
            from rag_multihop.eval.peers.llama_index import LlamaIndexFusionPeer
        except ImportError as exc:
            raise _missing("llama-index-core", exc) from exc
        return LlamaIndexFusionPeer(
            context.dataset.corpus,
            context.dense,
            context.bm25,
            mode=mode,
            child_k=peer_child_k(context.options),
        )

    build.__doc__ = f"Build the QueryFusionRetriever peer in mode {mode!r}."
    return build


def _haystack(join_mode: str) -> Callable[[BenchContext], Retriever]:
    def build(context: BenchContext) -> Retriever:
        try:
            from rag_multihop.eval.peers.haystack import HaystackJoinerPeer
        except ImportError as exc:
            raise _missing("haystack-ai", exc) from exc
        return HaystackJoinerPeer(
            context.dataset.corpus,
            context.dense,
            context.bm25,
            join_mode=join_mode,
            child_k=peer_child_k(context.options),
        )

    build.__doc__ = f"Build the DocumentJoiner peer in join mode {join_mode!r}."
    return build


for _name, (_mode, _description) in LLAMA_INDEX_PEERS.items():
    register_method(_name, _description, family="peer")(_llama_index(_mode))
for _name, (_mode, _description) in HAYSTACK_PEERS.items():
    register_method(_name, _description, family="peer")(_haystack(_mode))
