"""The tail guard and the lexical evidence of the multi-hop retriever, on corpora whose
cosines are set by hand (one unit vector per passage), through the public API."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.multihop import MultiHopRetriever, MultiHopSettings
from rag_multihop.multihop.scoring import guarded_order, lexical_evidence

DIM = 8


def _unit(cos: float, axis: int) -> np.ndarray:
    """A unit vector at cosine ``cos`` to the question (axis 0), the rest on ``axis``."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = cos
    vector[axis] = np.sqrt(1.0 - cos * cos)
    return vector


QUESTION = Query(
    "Where was the director of Polish Wedding born?",
    embedding=np.eye(DIM, dtype=np.float32)[0],
)

# The film names its director (the second hop) and, in passing, a city page that has
# nothing to do with the question (negative cosine): a title link, but no support.
GUARD_PASSAGES = [
    (
        Passage(
            "pw", "Polish Wedding is a film by Theresa Connelly, shot in Detroit.", "Polish Wedding"
        ),
        0.8,
    ),
    (
        Passage("tc", "Theresa Connelly is a director born in Philadelphia.", "Theresa Connelly"),
        0.3,
    ),
    (Passage("dt", "Detroit is a city on a river with many car factories.", "Detroit"), -0.05),
    (
        Passage(
            "w1", "A wedding in Poland lasts days and the director of it is the host.", "Weddings"
        ),
        0.5,
    ),
    (Passage("w2", "Film directors are often born in large cities.", "Film directors"), 0.45),
    (Passage("w3", "Birthplaces of people are kept in registers.", "Registers"), 0.4),
    (Passage("w4", "Pianos have many keys.", "Pianos"), 0.1),
]


def _retriever(rows, **overrides) -> MultiHopRetriever:
    corpus = Corpus([p for p, _ in rows])
    vectors = np.stack([_unit(cos, 1 + i % (DIM - 1)) for i, (_, cos) in enumerate(rows)])
    return MultiHopRetriever(corpus, vectors, graph_tail=False, **overrides)


def test_a_linked_page_the_question_does_not_support_leaves_the_tail() -> None:
    guarded = _retriever(GUARD_PASSAGES, fill_depth=3, lexical_weight=0.0)
    result = guarded.run(QUESTION, k=5)
    ids = [c.id for c in result.candidates]
    assert ids[:2] == ["pw", "tc"]
    assert "dt" not in ids
    assert ids[2:] == ["w1", "w2", "w3"]
    assert result.candidates[2].signals["first_stage"] == 1.0
    assert "fused" not in result.candidates[2].signals
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)


def test_without_the_guard_the_link_takes_rank_3() -> None:
    unguarded = _retriever(GUARD_PASSAGES, fill_depth=3, lexical_weight=0.0, tail_guard=False)
    assert [c.id for c in unguarded.retrieve(QUESTION, k=5)][:3] == ["pw", "tc", "dt"]


def test_a_linked_page_the_question_supports_keeps_its_rank() -> None:
    rows = [*GUARD_PASSAGES]
    rows[2] = (rows[2][0], 0.05)  # the same city page, now (weakly) like the question
    ids = [c.id for c in _retriever(rows, fill_depth=3, lexical_weight=0.0).retrieve(QUESTION, 5)]
    assert ids[:3] == ["pw", "tc", "dt"]


# Chunks titled by an opaque document name: the question's rare name is in the text of the
# chunk it asks about, which the embedding ranks below two look-alikes.
CHUNKS = [
    (Passage("doc-a#1", "Marit Hallendor founded the Veldmark ropeworks in 1851.", "doc-a"), 0.3),
    (Passage("doc-b#1", "A ropeworks makes rope from hemp fibres.", "doc-b"), 0.5),
    (Passage("doc-b#2", "Rope was made in long sheds near harbours.", "doc-b"), 0.45),
    (Passage("doc-c#1", "Harbours were busy in the nineteenth century.", "doc-c"), 0.2),
]
FOUNDER = Query("Who founded Veldmark?", embedding=np.eye(DIM, dtype=np.float32)[0])


def test_the_lexical_evidence_finds_the_chunk_that_spells_the_name() -> None:
    result = _retriever(CHUNKS, lexical_weight=0.25).run(FOUNDER, k=3)
    first = result.candidates[0]
    assert first.id == "doc-a#1"
    assert first.signals["lexical"] == 1.0
    assert all("lexical" in c.signals for c in result.candidates)


def test_without_lexical_evidence_the_look_alike_comes_first() -> None:
    result = _retriever(CHUNKS).run(FOUNDER, k=3)  # the default: off
    assert result.candidates[0].id == "doc-b#1"
    assert "lexical" not in result.candidates[0].signals


def test_a_given_lexical_scorer_is_used_and_checked() -> None:
    class Fixed:
        def __init__(self, values: list[float]) -> None:
            self.values = np.array(values)

        def scores(self, text: str) -> np.ndarray:
            return self.values

    corpus_rows = CHUNKS
    favour_c = _retriever(corpus_rows, lexical=Fixed([0.0, 0.0, 0.0, 4.0]), lexical_weight=1.0)
    assert favour_c.run(FOUNDER, k=3).candidates[0].id == "doc-c#1"
    wrong = _retriever(corpus_rows, lexical=Fixed([1.0, 2.0]), lexical_weight=0.25)
    with pytest.raises(ValueError, match="2 scores for 4 passages"):
        wrong.run(FOUNDER, k=3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("lexical_weight", 1.5, "lexical_weight must be in \\[0, 1\\], got 1.5"),
        ("lexical_weight", -0.1, "lexical_weight must be in \\[0, 1\\], got -0.1"),
        ("tail_guard", "yes", "tail_guard must be True or False, got 'yes'"),
    ],
)
def test_the_new_settings_name_the_bad_value(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MultiHopSettings(**{field: value})


def test_guarded_order_gives_unsupported_ranks_to_the_first_stage() -> None:
    assert guarded_order([5, 6, 7, 8], {5, 8}, [1, 2, 8], 4) == [
        (5, False),
        (1, True),
        (2, True),
        (8, False),
    ]
    assert guarded_order([5, 6], {5}, [], 2) == [(5, False)]
    assert guarded_order([5, 5, 6], {5, 6}, [], 5) == [(5, False), (6, False)]
    assert guarded_order([7, 1], {1}, [1, 2], 2) == [(1, True), (2, True)]


def test_lexical_evidence_is_scaled_by_the_best_match() -> None:
    assert lexical_evidence(np.array([1.0, 4.0, 0.0])).tolist() == [0.25, 1.0, 0.0]
    assert lexical_evidence(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert lexical_evidence(np.zeros(0)).tolist() == []
