"""A comparison of two films' directors on untitled passages (opaque ids, the subjects read
from the text), with a stand-in for the tail's graph walk whose masses are set by hand:
the fixture of the tail tests (walk floor, second hops)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rag_multihop import Corpus, Passage, Query
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.types import Candidate

DIM = 12

# Two films, each naming its director; the directors' pages are unlike the question (low
# cosine); four unrelated passages share a word with it. Each with its cosine to the question.
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
COMPARISON = "Which film has the director born first, Harlan Vale or Tide of Embers?"


def query(text: str) -> Query:
    """``text`` with the question's vector (the first axis)."""
    return Query(text, embedding=np.eye(DIM, dtype=np.float32)[0])


def _unit(cos: float, axis: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = cos
    vector[axis] = np.sqrt(1.0 - cos * cos)
    return vector


class FixedWalk:
    """A stand-in for the tail's graph walk returning fixed masses (of the corpus's ids)."""

    def __init__(self, corpus: Corpus, masses: Mapping[str, float]) -> None:
        self.corpus, self.masses = corpus, masses

    def rank(
        self, query: Query, seed_candidates: Sequence[Candidate] = (), k: int = 10
    ) -> list[Candidate]:
        known = {i: m for i, m in self.masses.items() if i in self.corpus.ids}
        ranked = sorted(known.items(), key=lambda item: -item[1])[:k]
        return [Candidate(self.corpus[self.corpus.ids.index(i)], m) for i, m in ranked]


def film_retriever(
    masses: Mapping[str, float], rows: list[tuple[Passage, float]] = PASSAGES, **overrides: bool
) -> MultiHopRetriever:
    """A retriever over ``rows`` (each passage at its cosine to the question) whose tail
    walk gives ``masses``."""
    corpus = Corpus([p for p, _ in rows])
    vectors = np.stack([_unit(cos, 1 + i) for i, (_, cos) in enumerate(rows)])
    retriever = MultiHopRetriever(corpus, vectors, **overrides)
    retriever.graph_retriever = FixedWalk(corpus, masses)  # type: ignore[assignment]
    return retriever
