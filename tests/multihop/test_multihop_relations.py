"""A question asking a relation of a name (*X's father*, *the director of film X*) is
answered by what X's passage names, so the pair takes X's link, not a passage that links to
X (X's brother). Through the public API on untitled passages (opaque ids, the subjects read
from the text) with a stand-in walk; the mention finder through :func:`asked_relations`."""

from __future__ import annotations

import pytest

from rag_multihop import Passage
from rag_multihop.multihop.relations import asked_relations
from rag_multihop.multihop.titles import TitleIndex
from tests.multihop.film_pair import film_retriever, query

# The prince's page names his father; his brother's page names him and is like the
# question; the father's page is not (low cosine).
ROWS = [
    (Passage("prince", "Li Zhong (643-665) was a crown prince, son of Gaozong Tang.", "d1"), 0.6),
    (Passage("brother", "Li Sujie (646-690) was a prince, a brother of Li Zhong.", "d2"), 0.35),
    (Passage("father", "Gaozong Tang (628-683) was the third emperor of the Tang.", "d3"), 0.1),
    (Passage("x1", "A prince is the son of a monarch.", "d4"), 0.2),
    (Passage("x2", "The Tang ruled China for three centuries.", "d5"), 0.15),
]
WALK = {"x1": 0.3, "x2": 0.2}


def _pair(question: str) -> set[str]:
    return set(film_retriever(WALK, ROWS).run(query(question), k=4).trace.pair)


@pytest.mark.parametrize(
    "question",
    ["Who was Li Zhong's father?", "Where was the father of Li Zhong born?"],
)
def test_a_relation_asked_of_a_name_pairs_it_with_what_its_passage_names(question) -> None:
    assert _pair(question) == {"prince", "father"}


def test_a_question_asking_no_relation_may_pair_the_name_with_a_page_naming_it() -> None:
    # the control: the same passages, no relation asked: the brother's link to the prince
    # and his likeness to the question win, which is what the rule above overrides
    assert _pair("Which prince was close to Li Zhong?") == {"prince", "brother"}


def _asked(titles: list[str], question: str) -> list[str]:
    found = TitleIndex(titles).mentions(question)
    return [found.mentions[i].text for i in sorted(asked_relations(found))]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("Who is Li Zhong's paternal grandmother?", ["li zhong"]),
        ("Who is Sibyl Hathaway's child-in-law?", ["sibyl hathaway"]),
        ("Who is the father-in-law of Sibyl Hathaway?", ["sibyl hathaway"]),
        ("Where was the director of film Seven Women born?", ["seven women"]),
        ("Where was the composer of Seven Women born?", ["seven women"]),
        ("Who is Li Zhong's father, and Sibyl Hathaway's?", ["li zhong"]),
        # a work a subject's page need not list, a place's parts, a plain mention: no relation
        ("When was Li Zhong's album released?", []),
        ("What is the seat of Sibyl Hathaway?", []),
        ("Did Seven Women win an award?", []),
        ("Who is the father of", []),
        ("", []),
    ],
)
def test_asked_relations_reads_the_question_shape(question: str, asked: list[str]) -> None:
    assert _asked(["Li Zhong", "Sibyl Hathaway", "Seven Women"], question) == asked


def test_the_rule_is_a_setting_and_off_every_link_counts() -> None:
    retriever = film_retriever(WALK, ROWS, asked_relations=False)
    assert set(retriever.run(query("Who was Li Zhong's father?"), k=4).trace.pair) == {
        "prince",
        "brother",
    }
