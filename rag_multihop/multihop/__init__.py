"""One LLM-free multi-hop retriever: the best pair for ranks 1-2, links and the graph after.

Modules, one job each: :mod:`.titles` (passage titles named in a text), :mod:`.subjects`
(names read from a passage's text), :mod:`.names` (their aliases), :mod:`.qualifiers` (a
question's qualified names), :mod:`.relations` (a relation a question asks of a name),
:mod:`.links` (passage-to-passage title links, their specificity and contexts), :mod:`.build` (the
index-time structures, pure functions over the corpus), :mod:`.scoring` (the scores as pure
functions), :mod:`.settings` (:class:`MultiHopSettings`) and :mod:`.retriever`
(:class:`MultiHopRetriever`). The ``multihop`` bench method lives in
:mod:`rag_multihop.eval.methods.multihop`. See ``docs/multihop.md``.

Example:
    >>> from rag_multihop.multihop import MultiHopSettings
    >>> MultiHopSettings().candidates, MultiHopSettings().graph_tail
    (50, True)
"""

from rag_multihop.multihop.build import (
    MultiHopStructures,
    build_structures,
    link_graph,
    shared_entities,
    tail_walker,
    title_index,
)
from rag_multihop.multihop.links import LinkGraph, SharedEntities
from rag_multihop.multihop.retriever import (
    PAIR_SCORE,
    MultiHopResult,
    MultiHopRetriever,
    MultiHopTrace,
)
from rag_multihop.multihop.settings import MultiHopSettings
from rag_multihop.multihop.signals import SIGNALS
from rag_multihop.multihop.titles import Mention, TitleIndex, title_variants

__all__ = [
    "PAIR_SCORE",
    "SIGNALS",
    "LinkGraph",
    "Mention",
    "MultiHopResult",
    "MultiHopRetriever",
    "MultiHopSettings",
    "MultiHopStructures",
    "MultiHopTrace",
    "SharedEntities",
    "TitleIndex",
    "build_structures",
    "link_graph",
    "shared_entities",
    "tail_walker",
    "title_index",
    "title_variants",
]
