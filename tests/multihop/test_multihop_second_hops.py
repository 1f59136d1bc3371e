"""Each pair passage the question names keeps its linked second hop right after the pair
(``second_hops``), however the tail's walk ranks it: both films of a comparison, the named
first hop of a bridge question whose pair took another partner. Through the public API, on
untitled passages (opaque ids, the subjects read from the text) with a stand-in walk whose
masses are set by hand."""

from __future__ import annotations

import pytest

from rag_multihop import Passage, Query
from rag_multihop.multihop import MultiHopRetriever, MultiHopSettings
from tests.multihop.film_pair import COMPARISON, PASSAGES, film_retriever, query

# the walk puts its mass (well above 2%) on the four unrelated passages
WALK = {"x1": 0.3, "x2": 0.25, "x3": 0.2, "x4": 0.15, "da": 0.002, "db": 0.001}
BRIDGE = "Where was the director of Harlan Vale born?"


def _retriever(
    rows: list[tuple[Passage, float]] = PASSAGES, **overrides: bool
) -> MultiHopRetriever:
    return film_retriever(WALK, rows, **overrides)


def _query(text: str) -> Query:
    return query(text)


def test_both_compared_passages_keep_their_second_hop_in_the_top_4() -> None:
    result = _retriever().run(_query(COMPARISON), k=5)
    ids = [c.id for c in result.candidates]
    assert set(result.trace.pair) == {"fa", "fb"}
    assert ids[2:4] == ["da" if ids[0] == "fa" else "db", "db" if ids[0] == "fa" else "da"]
    hops = result.candidates[2:4]
    assert all(c.signals["second_hop"] == 1.0 and c.score == 1.0 for c in hops)
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4, 5]
    assert result.candidates[4].score <= 1.0


def test_without_second_hops_the_walk_takes_the_ranks() -> None:
    ids = [c.id for c in _retriever(second_hops=False).retrieve(_query(COMPARISON), k=5)]
    assert not {"da", "db"} <= set(ids)


def test_a_bridge_pair_of_the_named_film_and_its_director_adds_nothing() -> None:
    result = _retriever().run(_query(BRIDGE), k=5)
    off = _retriever(second_hops=False).run(_query(BRIDGE), k=5)
    assert result.trace.pair == ("fa", "da")
    assert [c.id for c in result.candidates] == [c.id for c in off.candidates]
    assert not any("second_hop" in c.signals for c in result.candidates)


def test_a_named_first_hop_keeps_its_own_link_when_the_pair_took_another_partner() -> None:
    # The film names its director and its star; the star's page is the more like the
    # question, so the pair takes it, and the walk's mass lies elsewhere: without second
    # hops the director falls to the last rank.
    rows = [
        (
            Passage(
                "fa",
                "Harlan Vale is a 1931 film directed by Osric Menner and starring Lise Corvath.",
                "doc-01",
            ),
            0.7,
        ),
        (Passage("da", "Osric Menner (1890-1960) was a Dutch director.", "doc-03"), 0.15),
        (
            Passage("st", "Lise Corvath (1901-1977) was a French actress born in Lyon.", "doc-04"),
            0.5,
        ),
        *PASSAGES[4:],
    ]
    on = _retriever(rows=rows).run(_query(BRIDGE), k=5)
    assert on.trace.pair == ("fa", "st")
    assert on.candidates[2].id == "da"
    assert on.candidates[2].signals["second_hop"] == 1.0
    off = [c.id for c in _retriever(rows=rows, second_hops=False).retrieve(_query(BRIDGE), 5)]
    assert "da" not in off[:4]


def test_a_question_naming_no_passage_gets_no_second_hops() -> None:
    question = _query("Which director was born in a valley near the sea?")
    result = _retriever().run(question, k=5)
    assert not any("second_hop" in c.signals for c in result.candidates)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_a_short_k_keeps_the_order_and_length(k: int) -> None:
    full = [c.id for c in _retriever().retrieve(_query(COMPARISON), k=5)]
    assert [c.id for c in _retriever().retrieve(_query(COMPARISON), k=k)] == full[:k]


def test_the_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="second_hops must be True or False"):
        MultiHopSettings(second_hops="yes")  # type: ignore[arg-type]
