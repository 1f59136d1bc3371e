"""Hostile document content and ids through the corpus index writer: valid text (a NUL, an
emoji, a bidi mark, a newline or ``..`` in an id, no title) is written and read back
byte-exact; a lone surrogate (no UTF-8 form: a ``source_id`` made from a file name that is
not UTF-8) is refused naming the document and the field, before the index or its sources
map is touched."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from haystack import Document
from haystack_integrations.components.retrievers.rag_multihop import CorpusIndexMultiHopRetriever
from haystack_integrations.components.writers.rag_multihop import CorpusIndexWriter

from rag_multihop.store import CorpusIndex
from rag_multihop.store.sources import SOURCES_FILE

DIM = 8


def _document(
    id: str, content: str | None, title: object = "Rope", source: str | None = None
) -> Document:
    vector = np.random.default_rng(len(id)).normal(size=DIM).tolist()
    meta: dict[str, object] = {"title": title}
    if source is not None:
        meta |= {"source_id": source, "split_id": 0}
    return Document(id=id, content=content, meta=meta, embedding=vector)


def _state(path) -> tuple[int, list[str], list[tuple[str, str]]]:
    snapshot = CorpusIndex(path).snapshot()
    return snapshot.version, snapshot.corpus.ids, [(p.text, p.title) for p in snapshot.corpus]


def _sources(path) -> list[tuple[str, str]]:
    with sqlite3.connect(path / SOURCES_FILE) as connection:
        return sorted(connection.execute("SELECT passage, source FROM sources"))


HOSTILE = [
    _document("a\x00b", "Psycho\x00 is a film by Alfred Hitchcock.", "Psy\x00cho", "doc\x00"),
    _document("docs/../a\nb\\c", "Vertigo\u2028is a film.\x85", "\u200dVer\u200ftigo", "a/../b"),
    _document("\U0001f600", "\U0001f600\u200d\U0001f469 \u0301\u0301", None),
    _document("x" * 10_000, None, ""),
]


def test_hostile_but_valid_documents_are_written_and_read_back_byte_exact(tmp_path) -> None:
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(str(path))
    assert writer.run(HOSTILE) == {"documents_written": 4}
    retriever = CorpusIndexMultiHopRetriever(str(path), top_k=4)
    found = retriever.run(query="Who directed Psy\x00cho?\u2028", query_embedding=[1.0] * DIM)
    got = {d.id: (d.content, d.meta["title"]) for d in found["documents"]}
    assert got == {d.id: (d.content or "", d.meta["title"] or "") for d in HOSTILE}
    assert writer.delete_sources(["doc\x00"]) == 2
    assert writer.delete_documents(["a/../b", "\U0001f600"]) == 3
    assert _state(path)[1] == ["docs/../a\nb\\c", "x" * 10_000]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (_document("d\ud800", "Rope."), r"Passage\.id of passage 'd\\ud800' is not valid Unicode"),
        (_document("d2", "Ro\udc80pe."), r"Passage\.text of passage 'd2' is not valid Unicode"),
        (_document("d2", "Rope.", "R\ud800"), r"Passage\.title of passage 'd2' is not valid"),
        (
            _document("d2", "Rope.", source="caf\udce9.txt"),
            r"document 'd2': meta\['source_id'\] 'caf\\udce9.txt' is not valid Unicode",
        ),
    ],
)
def test_a_document_with_a_lone_surrogate_is_refused_before_anything_is_written(
    tmp_path, document: Document, message: str
) -> None:
    fresh = tmp_path / "fresh.idx"
    with pytest.raises(ValueError, match=message):
        CorpusIndexWriter(str(fresh)).run([_document("ok", "Fine."), document])
    assert not fresh.exists()
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(str(path))
    writer.run([_document("base", "Base.", source="base.txt")])
    before, sources = _state(path), _sources(path)
    with pytest.raises(ValueError, match=message):
        writer.run([_document("ok", "Fine."), document])
    assert _state(path) == before and _sources(path) == sources


def test_deleting_by_an_id_with_a_lone_surrogate_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(str(path))
    writer.run([_document("base", "Base.", source="base.txt")])
    before, sources = _state(path), _sources(path)
    with pytest.raises(ValueError, match=r"id 'base\\ud800' to delete is not valid Unicode"):
        writer.delete_documents(["base\ud800"])
    with pytest.raises(ValueError, match=r"source 'base\\udc80.txt' is not valid Unicode"):
        writer.delete_sources(["base.txt", "base\udc80.txt"])
    assert _state(path) == before and _sources(path) == sources
