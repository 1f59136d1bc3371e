"""The pair's partner: the residual cosine picks a partner that a title link or a name
supports; a partner that nothing but its residual would pick is chosen by its plain
similarity to the question instead (the first stage's order). Through the public API, on
untitled passages with vectors set by hand."""

from __future__ import annotations

import numpy as np

from rag_multihop import Corpus, Passage, Query
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.scoring import residual_cosine

DIM = 10
QUESTION = "Where was the director of Harlan Vale born?"


def _unit(vector: list[float]) -> np.ndarray:
    out = np.zeros(DIM, dtype=np.float32)
    out[: len(vector)] = vector
    return out / np.linalg.norm(out)


# the named film (the first hop); a passage like the question *and* like the film; one
# less like the question but unlike the film (what the residual prefers); three passages
# like the film, so that the one unlike it is no first hop itself
FILM = Passage("fa", "Harlan Vale is a 1931 film directed by Osric Menner.", "doc-01")
ALIKE = Passage("c1", "early sound pictures were made in the valley studio.", "doc-02")
UNLIKE = Passage("c2", "birth records of the region were kept by the church.", "doc-03")
FILLERS = [
    Passage("x1", "silent films were shot on nitrate stock.", "doc-04"),
    Passage("x2", "a studio lot held the sets of many films.", "doc-05"),
    Passage("x3", "film directors often came from the theatre.", "doc-06"),
]
VECTORS = {
    "fa": _unit([0.7, 0.714]),
    "c1": _unit([0.6, 0.6, 0.0, 0.529]),
    "c2": _unit([0.45, 0.0, 0.893]),
    "x1": _unit([0.55, 0.6, 0.0, 0.0, 0.58]),
    "x2": _unit([0.52, 0.6, 0.0, 0.0, 0.0, 0.6]),
    "x3": _unit([0.5, 0.6, 0.0, 0.0, 0.0, 0.0, 0.62]),
}
DIRECTOR = Passage("da", "Osric Menner (1890-1960) was a Dutch director.", "doc-07")


def _retriever(passages: list[Passage], vectors: dict[str, np.ndarray]) -> MultiHopRetriever:
    corpus = Corpus(passages)
    return MultiHopRetriever(corpus, np.stack([vectors[p.id] for p in passages]))


def _query() -> Query:
    return Query(QUESTION, embedding=_unit([1.0]))


def test_an_unsupported_partner_is_the_one_most_like_the_question() -> None:
    q, film = _unit([1.0]), VECTORS["fa"]
    cos = {i: float(VECTORS[i] @ q) for i in ("c1", "c2")}
    residual = {
        i: float(residual_cosine(np.array([cos[i]]), float(film @ q), film @ VECTORS[i])[0])
        for i in ("c1", "c2")
    }
    # the residual would take the passage unlike the film; the question is more like c1
    assert residual["c2"] > residual["c1"] and cos["c1"] > cos["c2"]
    result = _retriever([FILM, ALIKE, UNLIKE, *FILLERS], VECTORS).run(_query(), k=3)
    assert result.trace.pair == ("fa", "c1")
    assert [c.id for c in result.candidates[:2]] == ["fa", "c1"]


def test_a_partner_the_first_hop_links_keeps_the_residual() -> None:
    # the director's page is least like the question, but the film names him
    vectors = {**VECTORS, "da": _unit([0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.98])}
    result = _retriever([FILM, ALIKE, UNLIKE, DIRECTOR, *FILLERS], vectors).run(_query(), k=3)
    assert result.trace.pair == ("fa", "da")
