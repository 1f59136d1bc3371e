"""LLM-free condensation of follow-ups, and the check of a model's rewrite."""

from __future__ import annotations

import pytest

from rag_multihop.conversation import Subject, Turn, check_rewrite, condense, condense_checked

FOUNDER = Turn(
    "Where was the founder of Veldmark Ropeworks born?",
    (Subject("Veldmark Ropeworks"), Subject("Marit Hallendor", person=True)),
)
BAND = Turn(
    "In which town was the band that recorded the album Copper Tides formed?",
    (Subject("Copper Tides"), Subject("The Gull Wardens")),
)


@pytest.mark.parametrize(
    ("question", "turn", "standalone", "how"),
    [
        ("When did she die?", FOUNDER, "When did Marit Hallendor die?", "refers back: she"),
        (
            "and where was she born?",
            FOUNDER,
            "and where was Marit Hallendor born?",
            "refers back: she",
        ),
        (
            "When was it founded?",
            FOUNDER,
            "When was Veldmark Ropeworks founded?",
            "refers back: it",
        ),
        (
            "What was her first trade?",
            FOUNDER,
            "What was Marit Hallendor's first trade?",
            "refers back: her",
        ),
        ("Who trained her?", FOUNDER, "Who trained Marit Hallendor?", "refers back: her"),
        (
            "When did that company close?",
            FOUNDER,
            "When did Veldmark Ropeworks close?",
            "refers back: that company",
        ),
        ("Who founded them?", BAND, "Who founded The Gull Wardens?", "refers back: them"),
        (
            "What is their best-known song?",
            BAND,
            "What is The Gull Wardens' best-known song?",
            "refers back: their",
        ),
        (
            "Which river flows there?",
            FOUNDER,
            "Which river flows there (Marit Hallendor, Veldmark Ropeworks)?",
            "names nothing",
        ),
    ],
)
def test_follow_ups_carry_the_previous_answers_subject(
    question: str, turn: Turn, standalone: str, how: str
) -> None:
    result = condense(question, [turn])
    assert (result.standalone, result.how) == (standalone, how)
    assert result.follow_up


@pytest.mark.parametrize(
    "question",
    [
        "Who directed The Salt Lantern?",
        "Which comet was discovered first, Comet Tavish or Comet Tavell?",
        "In which town was the band that recorded the album Copper Tides formed?",
        "Who founded Halvik Cordage Works and where was he born?",
    ],
)
def test_new_questions_are_left_as_they_are(question: str) -> None:
    result = condense(question, [FOUNDER])
    assert result.standalone == question and result.carried == ()
    assert not result.follow_up and result.how == "self-contained"


def test_an_elliptical_question_reasks_the_previous_one() -> None:
    previous = Turn("When was Veldmark Ropeworks founded?", (Subject("Veldmark Ropeworks"),))
    result = condense("What about Halvik Cordage Works?", [previous])
    assert result.standalone == "When was Halvik Cordage Works founded?"
    assert result.how == "elliptical"
    assert condense("And Halvik Cordage Works?", [previous]).standalone == result.standalone


def test_a_pronoun_finds_a_person_or_a_thing_of_the_right_kind() -> None:
    ship = Turn("Which ship?", (Subject("Averil Line"), Subject("MV Serwin Star")))
    assert (
        condense("When was she launched?", [ship]).standalone
        == (
            "When was Averil Line launched?"  # no person: the previous question's name, else...
        )
        or condense("When was she launched?", [ship]).carried
    )
    no_subjects = Turn("Who founded Veldmark Ropeworks?")
    assert condense("When did it close?", [no_subjects]).standalone == (
        "When did Veldmark Ropeworks close?"
    )


def test_first_empty_and_odd_input() -> None:
    assert condense("  Who   founded  it? ", []).standalone == "Who founded it?"
    assert condense("", [FOUNDER]).standalone == ""
    assert condense("nan", [FOUNDER]).how == "names nothing"
    nothing = Turn("what now?")
    assert condense("and then?", [nothing]).how == "names nothing, nothing to carry"
    with pytest.raises(TypeError, match="question must be a string, got float"):
        condense(float("nan"), [FOUNDER])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rewrite", "why"),
    [
        (
            "Condensed question: The person who founded Veldmark Ropeworks was born in 1811.",
            "not a question",
        ),
        ("", "empty"),
        ("   ", "empty"),
        ("Where was Marit Hallendor born?", "drops the question's words ['die']"),
        ("When did Marit Hallendor die? She was an industrialist.", "not a question"),
        ("When " + "did she die " * 100 + "?", "too long"),
    ],
)
def test_bad_rewrites_are_refused(rewrite: str, why: str) -> None:
    assert check_rewrite("When did she die?", rewrite) == why
    result = condense_checked("When did she die?", [FOUNDER], rewrite)
    assert result.standalone == "When did Marit Hallendor die?"
    assert result.how == f"model rewrite refused: {why}; refers back: she"


def test_a_good_rewrite_is_used_and_a_name_must_survive() -> None:
    used = condense_checked(
        "When did she die?", [FOUNDER], "Standalone question: When did Marit Hallendor die?"
    )
    assert (used.standalone, used.how) == ("When did Marit Hallendor die?", "model rewrite")
    assert check_rewrite("Who directed The Salt Lantern?", "Who directed the film?") == (
        "drops the question's name 'Salt Lantern'"
    )
    assert condense_checked("When did she die?", [], "anything").how == "first question"
