"""Hostile node content and ids through the corpus index writer: valid text (a NUL, an emoji,
a bidi mark, a newline or ``..`` in an id, no title) is written and read back byte-exact; a
lone surrogate (no UTF-8 form: a ``ref_doc_id`` made from a file name that is not UTF-8) is
refused naming the node and the field, before the index or its sources map is touched."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from llama_index.core.schema import NodeRelationship, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.retrievers.rag_multihop import CorpusIndexMultiHopRetriever, CorpusIndexWriter

from rag_multihop.store import CorpusIndex
from rag_multihop.store.sources import SOURCES_FILE

DIM = 8


def _node(id_: str, text: str, title: object = "Rope", ref: str | None = None) -> TextNode:
    vector = np.random.default_rng(len(id_) + len(text)).normal(size=DIM)
    node = TextNode(id_=id_, text=text, metadata={"title": title}, embedding=vector.tolist())
    if ref is not None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=ref)
    return node


def _state(path) -> tuple[int, list[str], list[tuple[str, str]]]:
    snapshot = CorpusIndex(path).snapshot()
    rows = [(p.text, p.title) for p in snapshot.corpus]
    return snapshot.version, snapshot.corpus.ids, rows


def _sources(path) -> list[tuple[str, str]]:
    with sqlite3.connect(path / SOURCES_FILE) as connection:
        return sorted(connection.execute("SELECT passage, source FROM sources"))


HOSTILE = [
    _node("a\x00b", "Psycho\x00 is a film by Alfred Hitchcock.", "Psy\x00cho", ref="doc\x00"),
    _node("docs/../a\nb\\c", "Vertigo\u2028is a film.\x85", "\u200dVer\u200ftigo", ref="a/../b"),
    _node("\U0001f600", "\U0001f600\u200d\U0001f469 \u0301\u0301", None),
    _node("x" * 10_000, "  \t ", ""),
]


def test_hostile_but_valid_nodes_are_written_and_read_back_byte_exact(tmp_path) -> None:
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(index_path=str(path))
    writer(HOSTILE)
    retriever = CorpusIndexMultiHopRetriever(path, similarity_top_k=4, embed_model=None)
    bundle = QueryBundle("Who directed Psy\x00cho?\u2028", embedding=[1.0] * DIM)
    found = {
        n.node.node_id: (n.node.text, n.node.metadata["title"]) for n in retriever.retrieve(bundle)
    }
    assert found == {node.node_id: (node.text, node.metadata["title"] or "") for node in HOSTILE}
    assert writer.delete_ref_doc("doc\x00") == 2 and writer.delete(["a/../b", "\U0001f600"]) == 3
    assert _state(path)[1] == ["docs/../a\nb\\c", "x" * 10_000]


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (_node("n\ud800", "Rope."), r"Passage\.id of passage 'n\\ud800' is not valid Unicode"),
        (_node("n2", "Ro\udc80pe."), r"Passage\.text of passage 'n2' is not valid Unicode"),
        (_node("n2", "Rope.", "R\ud800"), r"Passage\.title of passage 'n2' is not valid Unicode"),
        (
            _node("n2", "Rope.", ref="caf\udce9.txt"),
            r"node 'n2': ref_doc_id 'caf\\udce9.txt' is not valid Unicode: a lone surrogate",
        ),
    ],
)
def test_a_node_with_a_lone_surrogate_is_refused_before_anything_is_written(
    tmp_path, node: TextNode, message: str
) -> None:
    fresh = tmp_path / "fresh.idx"
    with pytest.raises(ValueError, match=message):
        CorpusIndexWriter(index_path=str(fresh))([_node("ok", "Fine."), node])
    assert not fresh.exists()
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(index_path=str(path))
    writer([_node("base", "Base.", ref="base.txt")])
    before, sources = _state(path), _sources(path)
    with pytest.raises(ValueError, match=message):
        writer([_node("ok", "Fine."), node])
    assert _state(path) == before and _sources(path) == sources


def test_deleting_by_an_id_with_a_lone_surrogate_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "corpus.idx"
    writer = CorpusIndexWriter(index_path=str(path))
    writer([_node("base", "Base.", ref="base.txt")])
    before, sources = _state(path), _sources(path)
    with pytest.raises(ValueError, match=r"id 'base\\ud800' to delete is not valid Unicode"):
        writer.delete(["base\ud800"])
    with pytest.raises(ValueError, match=r"source 'base\\udc80.txt' is not valid Unicode"):
        writer.delete_ref_doc("base\udc80.txt")
    assert _state(path) == before and _sources(path) == sources
