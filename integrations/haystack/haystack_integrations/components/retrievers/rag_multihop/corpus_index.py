"""``CorpusIndexMultiHopRetriever``: the multi-hop retriever reading a persistent corpus index.

The index is the one a
:class:`~haystack_integrations.components.writers.rag_multihop.CorpusIndexWriter` (or
``rag-multihop index``) keeps; the document store is never read. Before each run the
component compares the index's version with the one it opened and reopens it (memory maps,
no rebuild) only when a writer has moved on: staleness by version, not by document count.
Returned documents are new ``Document`` objects (id, content, ``meta["title"]``) with the
score and every signal in ``meta["rag_multihop_signals"]``.

**Candidates from your store**: connect an embedding retriever's ``documents`` to this
component's ``documents`` input (``pipeline.connect("embedding_retriever.documents",
"multihop.documents")``, the retriever's ``top_k`` at least ``candidates``) and they are the
dense first stage instead of the index's own search: the document store does the vector
search, the index contributes titles, links and the entity graph. Document ids the index
lacks (written to the store but not yet to the index) are skipped and counted in
``trace["stale_candidates"]``. An index that holds no passages (created before the first
ingestion, or emptied by deletes), or a path that holds no index yet (the query side started
before the first ingestion; a warning once, version 0) is fine: runs return no documents
until some are written, and the index is opened as soon as a writer has created it.

Example:
    >>> import tempfile
    >>> from haystack import Document
    >>> from haystack_integrations.components.writers.rag_multihop import CorpusIndexWriter
    >>> path = tempfile.mkdtemp() + "/corpus.idx"
    >>> CorpusIndexWriter(path).run([
    ...     Document(id="pw", content="Polish Wedding is a film by Theresa Connelly.",
    ...              meta={"title": "Polish Wedding"}, embedding=[1.0, 0.0, 0.0]),
    ...     Document(id="tc", content="Theresa Connelly was born in Philadelphia.",
    ...              meta={"title": "Theresa Connelly"}, embedding=[0.6, 0.8, 0.0])])
    {'documents_written': 2}
    >>> retriever = CorpusIndexMultiHopRetriever(path, top_k=2)
    >>> out = retriever.run(query="Where was the director of Polish Wedding born?",
    ...                     query_embedding=[0.9, 0.3, 0.1])
    >>> [d.id for d in out["documents"]], out["version"]
    (['pw', 'tc'], 1)
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY, TITLE_KEY

from rag_multihop.multihop import MultiHopResult as CoreMultiHopResult
from rag_multihop.multihop import MultiHopRetriever as CoreMultiHopRetriever
from rag_multihop.multihop import MultiHopSettings
from rag_multihop.store import CorpusIndex, IndexSnapshot
from rag_multihop.store.segment import POINTER
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

_DEFAULTS = MultiHopSettings()


@component
class CorpusIndexMultiHopRetriever:
    """The multi-hop retriever over the corpus index at ``index_path`` (module docstring).

    Args:
        index_path: the index folder.
        top_k: documents returned (``run(top_k=...)`` overrides it).
        preload: map every page of each version the component opens
            (:meth:`rag_multihop.store.IndexSnapshot.preload`): steady latency from the first
            query for a long-running server, at the cost of reading the index's files.
        candidates ... lexical_weight: the :class:`rag_multihop.multihop.MultiHopSettings`
            fields of the same names (flat primitives, as for :class:`MultiHopRetriever`), kept as
            :attr:`settings`; ``to_dict`` stores each.
    """

    def __init__(
        self,
        index_path: str,
        *,
        top_k: int = 10,
        preload: bool = False,
        candidates: int = _DEFAULTS.candidates,
        first_hops: int = _DEFAULTS.first_hops,
        pair: bool = _DEFAULTS.pair,
        keep_first_stage: bool = _DEFAULTS.keep_first_stage,
        title_links: bool = _DEFAULTS.title_links,
        subjects: bool = _DEFAULTS.subjects,
        residual: bool = _DEFAULTS.residual,
        specificity: bool = _DEFAULTS.specificity,
        exclusive_mentions: bool = _DEFAULTS.exclusive_mentions,
        entity_weight: float = _DEFAULTS.entity_weight,
        entity_max_passages: int = _DEFAULTS.entity_max_passages,
        context_weight: float = _DEFAULTS.context_weight,
        context_window: int = _DEFAULTS.context_window,
        fill_depth: int = _DEFAULTS.fill_depth,
        graph_tail: bool = _DEFAULTS.graph_tail,
        graph_cap: int = _DEFAULTS.graph_cap,
        graph_seed_passages: int = _DEFAULTS.graph_seed_passages,
        tail_calibration: str = _DEFAULTS.tail_calibration,
        tail_fusion: str = _DEFAULTS.tail_fusion,
        graph_entity_share: float = _DEFAULTS.graph_entity_share,
        ppr: str = _DEFAULTS.ppr,
        tail_guard: bool = _DEFAULTS.tail_guard,
        second_hops: bool = _DEFAULTS.second_hops,
        asked_relations: bool = _DEFAULTS.asked_relations,
        lexical_weight: float = _DEFAULTS.lexical_weight,
    ) -> None:
        self.index_path = index_path
        self.top_k = check_positive_int(top_k, "top_k")
        if not isinstance(preload, bool):
            raise ValueError(f"preload must be True or False, got {preload!r}")
        self.preload = preload
        self.settings = MultiHopSettings(
            candidates=candidates,
            first_hops=first_hops,
            pair=pair,
            keep_first_stage=keep_first_stage,
            title_links=title_links,
            subjects=subjects,
            residual=residual,
            specificity=specificity,
            exclusive_mentions=exclusive_mentions,
            entity_weight=entity_weight,
            entity_max_passages=entity_max_passages,
            context_weight=context_weight,
            context_window=context_window,
            fill_depth=fill_depth,
            graph_tail=graph_tail,
            graph_cap=graph_cap,
            graph_seed_passages=graph_seed_passages,
            tail_calibration=tail_calibration,
            tail_fusion=tail_fusion,
            graph_entity_share=graph_entity_share,
            ppr=ppr,
            tail_guard=tail_guard,
            second_hops=second_hops,
            asked_relations=asked_relations,
            lexical_weight=lexical_weight,
        )
        self._snapshot: IndexSnapshot | None = None
        self._core: CoreMultiHopRetriever | None = None
        self._warned_missing = False

    def warm_up(self) -> None:
        """Open the index (again when a writer has made a new version)."""
        self._current()

    def _current(self) -> CoreMultiHopRetriever | None:
        """The retriever over the index's current version (``None`` while there is no index
        or it holds no passages), reopened when a writer has moved on."""
        if self._snapshot is None and not (Path(self.index_path) / POINTER).exists():
            if not self._warned_missing:
                self._warned_missing = True
                logger.warning(
                    "no corpus index at %s yet: no documents until a writer creates it",
                    self.index_path,
                )
            return None
        if self._snapshot is None or not self._snapshot.is_current():
            self._snapshot = CorpusIndex(self.index_path).snapshot()
            if self.preload:
                self._snapshot.preload()
            self._core = None
            if self._snapshot.n_live:
                self._core = CoreMultiHopRetriever.from_index(
                    self._snapshot, settings=self.settings
                )
        return self._core

    @component.output_types(documents=list[Document], version=int, trace=dict[str, Any])
    def run(
        self,
        query: str,
        query_embedding: list[float],
        top_k: int | None = None,
        documents: list[Document] | None = None,
    ) -> dict[str, Any]:
        """The ``top_k`` best documents for ``query`` (``query_embedding``: a text
        embedder's output) and the index version they came from; ``documents`` (an
        embedding retriever's output) replace the index's dense search (module docstring)."""
        k = check_positive_int(top_k if top_k is not None else self.top_k, "top_k")
        if query_embedding is None:
            raise ValueError(
                "query_embedding is required: connect the text embedder of the model that "
                "embedded the indexed documents to query_embedding"
            )
        vector = np.asarray(query_embedding, dtype=np.float32)
        core = self._current()
        if self._snapshot is not None and vector.size != self._snapshot.dim:
            raise ValueError(
                f"query_embedding has dimension {vector.size}, but the index at "
                f"{self.index_path} holds dimension {self._snapshot.dim}: connect the text "
                "embedder of the model that embedded the indexed documents"
            )
        question = Query(query, embedding=vector)
        first = None if documents is None else _candidates(documents)
        if core is None:
            result = CoreMultiHopResult.empty(question)
        else:
            result = core.run(question, k, candidates=first)
        documents = [
            Document(
                id=c.id,
                content=c.passage.text,
                meta={
                    TITLE_KEY: c.passage.title,
                    SIGNALS_KEY: {n: float(v) for n, v in c.signals.items()},
                },
                score=float(c.score),
            )
            for c in result.candidates
        ]
        return {
            "documents": documents,
            "version": 0 if self._snapshot is None else self._snapshot.version,
            "trace": result.trace.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            index_path=self.index_path,
            top_k=self.top_k,
            preload=self.preload,
            **dataclasses.asdict(self.settings),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusIndexMultiHopRetriever:
        return default_from_dict(cls, data)


def _candidates(documents: list[Document]) -> list[Candidate]:
    """An embedding retriever's documents as first-stage candidates (only ids are used)."""
    if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
        raise TypeError(
            f"documents must be a list of haystack Documents, got {type(documents).__name__}"
        )
    return [Candidate(Passage(d.id, d.content or ""), float(d.score or 0.0)) for d in documents]
