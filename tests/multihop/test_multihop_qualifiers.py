"""A question's qualified names: where each qualifier starts and what it says, on odd
input too."""

from __future__ import annotations

import pytest

from rag_multihop.multihop.qualifiers import narrowed, qualifiers
from rag_multihop.multihop.titles import TitleIndex


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("Who directed Seven Women (1944 Film)?", {4: ("1944", "film")}),
        ("Who is Lionel Sackville-West, 3Rd Baron Sackville's heir?",
         {5: ("3rd", "baron", "sackville")}),
        ("A (b1) c, Dee (e2) and Fgh (x y), Ij Kl", {1: ("b1",), 3: ("dee",), 4: ("e2",),
                                                    9: ("ij", "kl")}),
        ("Which came first, Rope or Vertigo?", {3: ("rope",)}),
        ("", {}),
        ("()", {}),
        ("Who is X (", {}),
        (",,, ,", {}),
        ("Who (is) (the) (of)?", {}),  # function words qualify nothing
    ],
)  # fmt: skip
def test_qualifiers_start_where_the_name_they_follow_ends(question, found) -> None:
    assert qualifiers(question) == found


def test_many_parentheses_are_read_in_one_pass() -> None:
    question = "Xy (Ab) and Cd, Ef or " * 5_000
    found = qualifiers(question)
    assert len(found) == 10_000 and found[1] == found[7] == ("ab",) and found[4] == ("ef",)


def test_a_qualifier_no_namesake_holds_keeps_every_referent() -> None:
    texts = ["Rope is a 1948 film.", "Rope is a 2001 song."]
    index = TitleIndex([["a", "Rope"], ["b", "Rope"]])
    for question, kept in [("Who made Rope (Opera)?", [0, 1]), ("Who made Rope (Song)?", [1])]:
        found = narrowed(index.mentions(question), question, texts.__getitem__)
        assert [sorted(m.referents) for m in found.mentions] == [kept]


def test_a_qualifiers_one_word_names_nothing_but_a_name_inside_a_parenthesis_does() -> None:
    texts = [
        "Film and television were taught there.",
        "Karma is a 2004 song.",
        "Alicia Keys is a singer.",
    ]
    index = TitleIndex([["a", "Film"], ["b", "Karma"], ["c", "Alicia Keys"]])
    for question, named in [
        ("Who directed The Organization (Film)?", []),
        ("Who wrote Karma (Alicia Keys Song)?", ["karma", "alicia keys"]),
    ]:
        found = narrowed(index.mentions(question), question, texts.__getitem__)
        assert [m.text for m in found.mentions] == named
