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
        ("Tlilpotonqui or Tlilpotoncatzin (died 1503) was a ruler.",
         ("Tlilpotonqui", "Tlilpotoncatzin")),
        ("Hitler – Dead or Alive is a 1942 film.", ("Hitler – Dead",)),
        ("The King of Kreuzberg (German: Der König von Kreuzberg) is a 1990 film.",
         ("King of Kreuzberg", "Der König von Kreuzberg")),
        ("Bláznova kronika( literally A Jester's Tale) is a 1964 Czech film.",
         ("Bláznova kronika", "A Jester's Tale")),
        ("Andrea Bianchi (March 31, 1925) was a director.", ("Andrea Bianchi",)),
        ("Li Zhong (李忠) (643 – 665), courtesy name Zhengben, was a prince.", ("Li Zhong",)),
        ('Anne "Henriette" of France (1727 – 1752) was a princess.',
         ("Anne Henriette of France", "Henriette of France")),
        ('Melvin Eugene "Tony" Bettenhausen (1916 – 1961) was a driver.',
         ("Melvin Eugene Tony Bettenhausen", "Tony Bettenhausen")),
        ("Dove vai tutta nuda?, internationally released as Where Are You Going All Naked?, "
         "is a 1969 film.", ("Dove vai tutta nuda", "Where Are You Going All Naked")),
        ("Les amies de ma femme or My Wife's Girlfriends is a 1992 film.",
         ("Les amies de ma femme", "My Wife's Girlfriends")),
        ("Borys Lankosz (born 1973 in Cracow) - Polish film director.", ("Borys Lankosz",)),
        ("Friday the 13th[ aka Friday the Thirteenth] is a lost 1916 film.",
         ("Friday the 13th", "Friday the Thirteenth")),
        ("A Little Sister of Everybody, sometimes called A Little Sister to Everybody, is a film.",
         ("Little Sister of Everybody", "A Little Sister to Everybody")),
        ("Consort Liang (梁貴人) (62-83) , posthumous title Empress Gongzhuai, was a consort.",
         ("Consort Liang",)),
        ("1510) was a prelate of Dubrovnik. Rope is a 1948 film.", ("Rope",)),  # a cut chunk
        ("Unionist politician who served as mayor. Rope is a 1948 film.", ("Rope",)),
        ("Awards, for which Glasper was a producer. Rope is a 1948 film.", ("Rope",)),
        ("Gus Meins, who was born Gustave Luley, was a director.", ("Gus Meins",)),
        ("October 1969) was a singer. Rope is a 1948 film.", ("Rope",)),
        ("Return of the Jedi( also known as Episode VI) is a 1983 film.",
         ("Return of the Jedi", "Episode VI")),
        ("Boum sur Paris, is a French comedy film from 1953.", ("Boum sur Paris",)),
        ("Catherine de' Medici (1519 – 1589), was an Italian noblewoman.",
         ("Catherine de Medici",)),
        ("Henry Wharton (1967) born in Leeds is an English boxer.", ("Henry Wharton",)),
        ("Renee Torres (1911 – 1998) born Renee Osterman, was an actress.", ("Renee Torres",)),
        ("Born to die in Paris is a 1990 film.", ("Born to die in Paris",)),
        ("In 1990, it was shown. Awards, for which Glasper was a producer.", ()),
        ("Humphrey de Bohun, 7th Earl of Hereford, 6th Earl of Essex, 2nd Earl of Northampton, "
         "KG (1342 – 1373), was an English nobleman.", ("Humphrey de Bohun",)),
        # past the opening, a name's apposition of more than 12 words makes no subject
        ("Rope is a 1948 film. Bea Lind, a miller from the north of the country who lived by "
         "the river for many years, was its cook.", ("Rope",)),
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
