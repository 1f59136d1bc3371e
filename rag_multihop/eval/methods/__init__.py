"""Benchmark method factories, one module per family; importing this package registers them.

Each module registers ``build(context) -> Retriever`` factories with
:func:`rag_multihop.eval.registry.register_method`. Method packages (``association/``,
``fusion/``, ``graph/``, ``bridge/``, ``coop/``, ``multihop/``) hold only the method and never
import this package. The framework peers (:mod:`.peers`) load LlamaIndex or Haystack only when
a peer is built.
"""

from rag_multihop.eval.methods import (
    association,
    baselines,
    bridge,
    coop,
    finetune,
    graph_fusion,
    multihop,
    peers,
)

__all__ = [
    "association",
    "baselines",
    "bridge",
    "coop",
    "finetune",
    "graph_fusion",
    "multihop",
    "peers",
]
