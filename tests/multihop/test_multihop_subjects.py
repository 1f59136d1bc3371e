"""Subjects read from a passage's text when its title does not name them."""

from __future__ import annotations

import pytest

from rag_multihop import Passage
from rag_multihop.multihop.subjects import passage_names, text_subjects


@pytest.mark.parametrize(
    ("text", "subjects"),
    [
        ("Polish Wedding is a 1998 film directed by Theresa Connelly.", ("Polish Wedding",)),
        ("Andrea Bianchi( March 31, 1925- November 14, 2013) was an Italian director.",
         ("Andrea Bianchi",)),
        ("Gus Meins (March 6, 1893 – August 1, 1940), born Gustave Luley, was a director.",
         ("Gus Meins",)),
        ("The Humaya River is a river in Sinaloa.", ("Humaya River",)),
        ("He was born in Lyon. In 2007, it was listed. She is a singer.", ()),
        ("a symphonic poem is a piece of orchestral music.", ()),
        ("The mill closed. Bea Lind was a miller. Corvik Harbour is a port.",
         ("Bea Lind", "Corvik Harbour")),
        ("Ælfwine (c. 661–679) was the King of Deira.", ("Ælfwine",)),
        ("Mohammed bin Nawwaf Al Saud (born 1953) and is a diplomat.",
         ("Mohammed bin Nawwaf Al Saud",)),
        ("A Yank in the R.A.F. is a 1941 film.", ("Yank in the R.A.F",)),
        ("On Body and Soul is a 2017 film. In 2007, it was shown.", ("On Body and Soul",)),
        ("John Villiers Farrow was a director.", ("John Villiers Farrow",)),
    ],
)  # fmt: skip
def test_sentences_opening_with_a_name_and_a_copula_give_subjects(text, subjects) -> None:
    assert text_subjects(text) == subjects


def test_subjects_are_read_only_when_the_title_shares_no_word_with_the_text() -> None:
    titled = Passage("a", "William I was King of Wurttemberg.", "William I of Württemberg")
    opaque = Passage("b", "William I was King of Wurttemberg.", "doc-3f2a9c")
    untitled = Passage("c", "William I was King of Wurttemberg.")
    assert passage_names(titled) == ("William I of Württemberg",)
    assert passage_names(opaque) == ("doc-3f2a9c", "William I")
    assert passage_names(untitled) == ("William I",)
