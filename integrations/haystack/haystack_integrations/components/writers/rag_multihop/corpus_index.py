"""``CorpusIndexWriter``: keeps a persistent rag-multihop corpus index in step with an indexing
pipeline.

Put it after the document embedder (beside or after a ``DocumentWriter``): every document of
``run(documents=...)`` is upserted into the :class:`rag_multihop.store.CorpusIndex` at
``index_path`` (created on the first run with the documents' embedding dimension; a document
already there is replaced, an unchanged one costs no write). A splitter's chunks (a
document whose meta holds both ``source_id`` and ``split_id``, as Haystack's splitters set
them) replace the earlier chunks of their source, in one index version: a changed file
indexed again (its chunks under new ids) leaves none of its old chunks behind
(:mod:`rag_multihop.store.sources`). Any other document is upserted by its id alone, so a
``source_id`` field of the user's own (every document of a crawl under one name) deletes
nothing.
:meth:`CorpusIndexWriter.delete_documents` and :meth:`CorpusIndexWriter.delete_sources` are
the delete paths (call them where you delete from your document store). Documents become
passages by the package's rule (``Document.id``, ``content``, ``meta["title"]``).
:class:`~haystack_integrations.components.retrievers.rag_multihop.CorpusIndexMultiHopRetriever`
reads the index.

Example:
    >>> import tempfile
    >>> from haystack import Document
    >>> writer = CorpusIndexWriter(index_path=tempfile.mkdtemp() + "/corpus.idx")
    >>> writer.run([Document(id="rope", content="Rope is a film.", meta={"title": "Rope"},
    ...                      embedding=[1.0, 0.0])])
    {'documents_written': 1}
    >>> writer.delete_documents(["rope"])
    2
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import document_to_passage

from rag_multihop.store import CorpusIndex, merge_policy
from rag_multihop.store.segment import POINTER
from rag_multihop.store.sources import delete_sources, write_sources
from rag_multihop.types import Passage
from rag_multihop.validation import (
    as_embedding_matrix,
    check_batch_dim,
    check_source_ids,
    check_unique_ids,
    warn_textless,
)

logger = logging.getLogger(__name__)

SOURCE_KEY = "source_id"
"""The meta key of a chunk's source document (Haystack's splitters set it)."""

SPLIT_KEY = "split_id"
"""The meta key of a chunk's position in its source (set beside :data:`SOURCE_KEY`)."""


def _source(document: Document) -> str | None:
    """The source id of a splitter's chunk as a string (a number a pipeline of the user's
    wrote is one too); ``None`` for a document that is no chunk (no ``split_id``) or has no
    source (or an empty one); a chunk's source that is a collection (a list, a numpy array)
    is a ``ValueError``.

    >>> _source(Document(content="x", meta={"source_id": 7, "split_id": 0}))
    '7'
    >>> _source(Document(content="x", meta={"source_id": "crawl"})) is None
    True
    """
    value = document.meta.get(SOURCE_KEY)
    if document.meta.get(SPLIT_KEY) is None or value is None:
        return None
    if isinstance(value, Collection) and not isinstance(value, str):
        raise ValueError(
            f"document {document.id!r}: meta[{SOURCE_KEY!r}] must be the id of the document "
            f"it was split from (a string), got {type(value).__name__} {value!r:.60}"
        )
    return str(value) if value != "" else None


def _plain(passage: Passage) -> Passage:
    """The passage without the document riding in its metadata (the index keeps no objects)."""
    return Passage(passage.id, passage.text, passage.title)


@component
class CorpusIndexWriter:
    """Upserts documents into the corpus index at ``index_path`` (module docstring)."""

    def __init__(self, index_path: str, merge_factor: int = 10) -> None:
        """``merge_factor``: how many small trailing segments of one size make a write merge
        them (the core's ``MergePolicy``; 0: never, until ``compact()``)."""
        if not isinstance(index_path, str) or not index_path:
            raise ValueError(f"index_path must be a non-empty path string, got {index_path!r}")
        self.index_path = index_path
        self.merge_factor = merge_factor
        self._merge = merge_policy(merge_factor)

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """Upsert ``documents`` (each needs its ``embedding``, of the index's dimension: put
        this after the embedder; ids must be unique within the batch). Nothing is written
        when a check fails; documents without content are written, with a warning."""
        if not documents:
            return {"documents_written": 0}
        ids = [d.id for d in documents]
        missing = [d.id for d in documents if d.embedding is None]
        if missing:
            raise ValueError(
                f"{len(missing)} document(s) have no embedding, e.g. {missing[:3]}; put "
                "CorpusIndexWriter after the document embedder"
            )
        check_unique_ids(ids, "document")
        vectors = as_embedding_matrix(
            [d.embedding for d in documents], name="document embeddings", ids=ids
        )
        passages = [_plain(document_to_passage(d)) for d in documents]
        sources = [_source(d) for d in documents]
        check_source_ids(ids, sources, "document", f"meta[{SOURCE_KEY!r}]")
        warn_textless(passages, "document")
        index = self._index(vectors.shape[1])
        check_batch_dim(vectors.shape[1], index.dim, ids[0], "document", self.index_path)
        write_sources(index, passages, vectors, sources)
        return {"documents_written": len(documents)}

    def delete_documents(self, document_ids: list[str], *, missing_ok: bool = True) -> int:
        """Delete documents from the index by id; the index's new version."""
        return self._open().delete(document_ids, missing_ok=missing_ok)

    def delete_sources(self, source_ids: list[str]) -> int:
        """Delete every chunk this writer wrote for the source documents ``source_ids``
        (their ``meta["source_id"]``); the index's new version."""
        return delete_sources(self._open(), source_ids)

    def _open(self) -> CorpusIndex:
        return CorpusIndex(self.index_path, merge=self._merge)

    def _index(self, dim: int) -> CorpusIndex:
        if (Path(self.index_path) / POINTER).exists():
            return self._open()
        return CorpusIndex.create(self.index_path, dim=dim, merge=self._merge)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, index_path=self.index_path, merge_factor=self.merge_factor)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusIndexWriter:
        return default_from_dict(cls, data)
