"""A diffuse tail walk (no passage holding 2% of its mass: a corpus whose titles the entity
graph cannot link, e.g. opaque document ids) must not push the fill's linked second hops
out of the top 5; a walk with mass somewhere is fused as before. Through the public API, with a
stand-in walk whose masses are set by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop import Corpus, Passage, Query
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.scoring import MIN_WALK_MASS
from rag_multihop.types import Candidate

DIM = 12

# A comparison of two films' directors: the question names both films, each film names
# its director; the directors' pages are unlike the question (low cosine).
PASSAGES = [
    (Passage("fa", "Harlan Vale is a 1931 film directed by Osric Menner.", "doc-01"), 0.7),
    (Passage("fb", "Tide of Embers is a 1952 film directed by Lise Corvath.", "doc-02"), 0.6),
    (Passage("da", "Osric Menner (1890-1960) was a Dutch director.", "doc-03"), 0.15),
    (Passage("db", "Lise Corvath (1901-1977) was a French director.", "doc-04"), 0.1),
    (Passage("x1", "Ember is a glowing piece of coal in a fire.", "doc-05"), 0.45),
    (Passage("x2", "Vale is a word for a valley.", "doc-06"), 0.4),
    (Passage("x3", "Tides are caused by the moon.", "doc-07"), 0.35),
    (Passage("x4", "Film directors often come from theatre.", "doc-08"), 0.3),
]
QUESTION = Query(
    "Which film has the director born first, Harlan Vale or Tide of Embers?",
    embedding=np.eye(DIM, dtype=np.float32)[0],
)


def _unit(cos: float, axis: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = cos
    vector[axis] = np.sqrt(1.0 - cos * cos)
    return vector


class _Walk:
    """A stand-in for the tail's graph walk returning fixed masses."""

    def __init__(self, corpus: Corpus, masses: dict[str, float]) -> None:
        self.corpus, self.masses = corpus, masses

    def rank(
        self, query: Query, seed_candidates: Sequence[Candidate] = (), k: int = 10
    ) -> list[Candidate]:
        ranked = sorted(self.masses.items(), key=lambda item: -item[1])[:k]
        return [Candidate(self.corpus[self.corpus.ids.index(i)], m) for i, m in ranked]


def _retriever(
    masses: dict[str, float], rows: list[tuple[Passage, float]] = PASSAGES, **overrides: bool
) -> MultiHopRetriever:
    corpus = Corpus([p for p, _ in rows])
    vectors = np.stack([_unit(cos, 1 + i) for i, (_, cos) in enumerate(rows)])
    retriever = MultiHopRetriever(corpus, vectors, **overrides)
    retriever.graph_retriever = _Walk(corpus, masses)  # type: ignore[assignment]
    return retriever


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
