"""Extractive answers: the best sentence of each hop, cited with the card's number."""

from __future__ import annotations

from rag_multihop import Passage
from rag_multihop.conversation import Step, extractive_answer, sentences
from rag_multihop.demo import load_demo_dataset

DEMO = {p.id: p for p in load_demo_dataset().corpus}


def steps(*items: tuple[str, str]) -> list[Step]:
    return [Step(n, DEMO[pid], step) for n, (pid, step) in enumerate(items, start=1)]


def test_hop_one_then_the_passage_it_names() -> None:
    answer = extractive_answer(
        "Where was the founder of Veldmark Ropeworks born?",
        steps(
            ("veldmark-ropeworks", "hop 1"), ("marit-hallendor", "hop 2"), ("kelmsby", "related")
        ),
    )
    assert answer.cited == (1, 2)
    assert [s.passage_id for s in answer.supports] == ["veldmark-ropeworks", "marit-hallendor"]
    assert "by Marit Hallendor [1]." in answer.text
    assert answer.text.endswith(
        "Born in Brennick, a mill town of the Merrin Valley, she "
        "apprenticed with a sailmaker before moving to the coast, "
        "where she established her own ropewalk [2]."
    )


def test_the_link_named_in_hop_one_beats_an_unrelated_hop_two() -> None:
    answer = extractive_answer(
        "Who directed The Salt Lantern?",
        steps(("the-salt-lantern", "hop 1"), ("hanne-marrow", "hop 2"), ("ilse-marrow", "related")),
    )
    assert answer.supports[0].sentence.endswith("directed by Ilse Marrow.")
    assert answer.cited == (1, 3)  # hop 1 names Ilse Marrow, not the trace's hop 2


def test_a_one_hop_question_gets_one_sentence() -> None:
    answer = extractive_answer(
        "When did Marit Hallendor die?",
        steps(("marit-hallendor", "hop 1"), ("tobias-hallendor", "hop 2"), ("brennick", "related")),
    )
    assert answer.cited == (1,) and "(1839–1911)" in answer.text


def test_a_comparison_takes_the_other_named_side() -> None:
    answer = extractive_answer(
        "Which comet was discovered first, Comet Tavish or Comet Tavell?",
        steps(("comet-tavell", "hop 1"), ("agnes-tavell", "related"), ("comet-tavish", "related")),
    )
    assert [s.passage_id for s in answer.supports] == ["comet-tavell", "comet-tavish"]
    assert "1893" in answer.supports[1].sentence  # the sentence with the year, not the first


def test_a_method_without_hops_uses_its_ranking() -> None:
    answer = extractive_answer(
        "In which town was the band that recorded the album Copper Tides formed?",
        steps(
            ("fogbell-records", "ranked"),
            ("copper-tides", "ranked"),
            ("the-gull-wardens", "ranked"),
        ),
    )
    assert answer.cited == (2, 3) and "formed in Kelmsby" in answer.text


def test_empty_retrieval_and_unmatched_passages() -> None:
    assert extractive_answer("Who?", []).text == "" and extractive_answer("Who?", []).cited == ()
    lone = [Step(4, Passage("x", "Nothing here matches. At all."), "hop 1")]
    answer = extractive_answer("Where was Zed born?", lone)
    assert answer.text == "Nothing here matches [4]."  # hop 1's opening sentence, cited
    assert extractive_answer("", lone).cited == (4,)


def test_sentences_do_not_break_after_initials_or_abbreviations() -> None:
    text = "Brennick Athletic F.C. was founded in 1903. It plays at Millrace Park."
    assert sentences(text) == [
        "Brennick Athletic F.C. was founded in 1903.",
        "It plays at Millrace Park.",
    ]
    assert sentences("") == []
