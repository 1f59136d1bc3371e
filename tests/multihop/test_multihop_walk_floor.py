"""A diffuse tail walk (no passage holding 2% of its mass: a corpus whose titles the entity
graph cannot link, e.g. opaque document ids) must not push the fill's linked second hops
out of the top 5; a walk with mass somewhere is fused as before. Through the public API, with a
stand-in walk whose masses are set by hand."""

from __future__ import annotations

from rag_multihop import Passage
from rag_multihop.multihop.scoring import MIN_WALK_MASS
from tests.multihop.film_pair import COMPARISON, PASSAGES, query
from tests.multihop.film_pair import film_retriever as _retriever

QUESTION = query(COMPARISON)

DIFFUSE = {"x1": 0.009, "x2": 0.008, "x3": 0.007, "x4": 0.006, "da": 0.002, "db": 0.001}


def test_a_diffuse_walk_leaves_the_linked_second_hops_in_place() -> None:
    ids = [c.id for c in _retriever(DIFFUSE).retrieve(QUESTION, k=5)]
    assert set(ids[:2]) == {"fa", "fb"}
    assert set(ids[2:4]) == {"da", "db"}


def test_without_the_guard_the_diffuse_walk_takes_the_ranks() -> None:
    retriever = _retriever(DIFFUSE, tail_guard=False, second_hops=False)
    ids = [c.id for c in retriever.retrieve(QUESTION, k=5)]
    assert not {"da", "db"} <= set(ids[:4])


def test_a_walk_that_reaches_a_passage_with_mass_is_fused_as_before() -> None:
    masses = {**DIFFUSE, "x1": 4 * MIN_WALK_MASS}
    guarded = _retriever(masses).run(QUESTION, k=5)
    unguarded = _retriever(masses, tail_guard=False).run(QUESTION, k=5)
    by_id = {c.id: c for c in guarded.candidates}
    assert by_id["x1"].signals["graph"] == 4 * MIN_WALK_MASS
    assert [c.id for c in guarded.candidates] == [c.id for c in unguarded.candidates]


def test_on_titled_passages_a_diffuse_walk_is_fused_as_before() -> None:
    titles = ["Harlan Vale", "Tide of Embers", "Osric Menner", "Lise Corvath"]
    titled = [
        (Passage(p.id, p.text, titles[i]), cos) if i < len(titles) else (p, cos)
        for i, (p, cos) in enumerate(PASSAGES)
    ]
    guarded = [c.id for c in _retriever(DIFFUSE, titled).retrieve(QUESTION, k=5)]
    unguarded = [c.id for c in _retriever(DIFFUSE, titled, tail_guard=False).retrieve(QUESTION, 5)]
    assert guarded == unguarded
