"""A persistent, incremental index of a corpus and everything the methods derive from it.

- :mod:`.index`: :class:`CorpusIndex` (create, add, delete, upsert, compact, snapshot);
  :mod:`.merging`: :class:`MergePolicy`, when a write rewrites the small trailing segments;
- :mod:`.snapshot`: :class:`IndexSnapshot`, a pinned read-only version and the structures
  the methods read (corpus, vectors, dense search, title index, link graph, entity graph);
- :mod:`.derive`: the indexing stages as pure functions from passages to a segment's arrays;
- :mod:`.batches`: a first build as two passes of batch functions and a merge (the
  in-process engine); :mod:`.ray_build`: the same plan on Ray actors, built in
  :mod:`.parts` (``docs/scale.md``);
- :mod:`.served`: the serving arrays each write stores for its version (links, entity
  graph, walk in the live numbering), so readers gather nothing;
- :mod:`.segment`, :mod:`.tables`, :mod:`.views`, :mod:`.serving`: the on-disk segments,
  their array forms, the look-ups across segments and the read-side objects.

- :mod:`.sources`: which passages each source document wrote, so that a changed document
  ingested again replaces its chunks (the framework writers use it);
- :mod:`.sidecars`: per-passage arrays of a model (AAR's passage transforms, RaLa's token
  states) stored beside the segments and kept right by every write.

Methods open it without a rebuild: ``MultiHopRetriever.from_index(snapshot)``,
:func:`dense_retriever`, :func:`graph_fusion_retriever`, :func:`aar_retriever`,
:func:`rala_retriever` and :func:`bridge_retriever`. See
``docs/index.md``.
"""

from rag_multihop.store.index import CorpusIndex
from rag_multihop.store.merging import MergePolicy, merge_policy
from rag_multihop.store.methods import (
    aar_retriever,
    bridge_retriever,
    dense_retriever,
    graph_fusion_retriever,
    graph_retriever,
    rala_retriever,
)
from rag_multihop.store.segment import IndexLockedError
from rag_multihop.store.settings import IndexSettings
from rag_multihop.store.snapshot import IndexSnapshot

__all__ = [
    "CorpusIndex",
    "IndexLockedError",
    "IndexSettings",
    "IndexSnapshot",
    "MergePolicy",
    "aar_retriever",
    "bridge_retriever",
    "dense_retriever",
    "graph_fusion_retriever",
    "graph_retriever",
    "merge_policy",
    "rala_retriever",
]
