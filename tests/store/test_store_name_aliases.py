"""The persistent index knows subjects by their aliases exactly as an in-memory build does,
through adds and deletes: a passage added under a name takes that name from the passage
that had it only as an alias, and gives it back when deleted."""

from __future__ import annotations

from rag_multihop import Corpus, Passage
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.build import build_structures
from rag_multihop.multihop.settings import MultiHopSettings
from rag_multihop.store import CorpusIndex

MATCH = Passage("m", "The match was won by John Smith of Leeds.", "doc-1")
PAINTER = Passage("a", "John Robert Smith was a painter.", "doc-2")
FOOTBALLER = Passage("b", "John Smith was a footballer.", "doc-3")


def _stored_links(index: CorpusIndex, encoder) -> dict[int, float]:
    stored = MultiHopRetriever.from_index(index.snapshot(), encoder=encoder)
    return stored.links.targets(0)


def _fresh_links(passages: list[Passage]) -> dict[int, float]:
    return build_structures(Corpus(passages), MultiHopSettings()).links.targets(0)


def test_an_alias_link_follows_adds_and_deletes_as_a_fresh_build(tmp_path, hashing_encoder):
    def vectors(passages):
        return hashing_encoder.encode([p.embedding_text for p in passages])

    index = CorpusIndex.build(tmp_path / "idx", [MATCH, PAINTER], vectors([MATCH, PAINTER]))
    assert _stored_links(index, hashing_encoder) == _fresh_links([MATCH, PAINTER]) == {1: 1.0}

    index.add([FOOTBALLER], vectors([FOOTBALLER]))
    everyone = [MATCH, PAINTER, FOOTBALLER]
    assert _stored_links(index, hashing_encoder) == _fresh_links(everyone) == {2: 1.0}

    index.delete(["b"])
    assert _stored_links(index, hashing_encoder) == _fresh_links([MATCH, PAINTER]) == {1: 1.0}
    index.compact()
    assert _stored_links(index, hashing_encoder) == {1: 1.0}
