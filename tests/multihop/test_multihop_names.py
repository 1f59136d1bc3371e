"""Names the way people write them: a subject read from one passage is found under the
shorter or other forms another passage's text or a question writes it in, and a looser
form never links a person it may not mean."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.multihop import MultiHopRetriever, MultiHopSettings
from rag_multihop.multihop.build import build_structures
from rag_multihop.multihop.names import name_aliases
from rag_multihop.multihop.subjects import text_subjects
from rag_multihop.multihop.titles import TitleIndex


@pytest.mark.parametrize(
    ("name", "alias"),
    [
        ("Lieutenant Colonel John Augustus Conolly VC", "John Conolly"),
        ("Lieutenant Colonel John Augustus Conolly VC", "John Augustus Conolly"),
        ("Sir Arthur Ignatius Conan Doyle KStJ", "Arthur Conan Doyle"),
        ("William Christy Cabanne", "Christy Cabanne"),
        ("Timothy Burstall AM", "Tim Burstall"),
        ("Christopher Schwinden", "Chris Schwinden"),
        ("Enzo Girolami Castellari", "Enzo G. Castellari"),
        ("Étienne Bernard Marie de Crécy", "Étienne de Crécy"),
        ("Edward Davis Wood Jr", "Edward Wood"),
        ("Joseph Ferdinand Leopold of Bavaria", "Joseph Ferdinand of Bavaria"),
        ("Robert II of Dreux", "Robert II, Count of Dreux"),
        ("John, Count of Brienne", "John of Brienne"),
        ("Francis Albert Sinatra", "Frank Sinatra"),
        ("Edgar Sinco Romero", "Eddie Romero"),
        ("Charles Edward Anderson Berry", "Chuck Berry"),
        ("Ventura Pons Sala", "Ventura Pons"),  # a second surname dropped
        ("Shirley Temple Black", "Shirley Temple"),  # a married name dropped
        ("Earl J. Valiquette", "Earl Valiquette"),  # a rank before an initial is a given name
        ("Prince K. Amponsah", "Prince Amponsah"),
        ("Lieutenant J. Smith", "J. Smith"),  # a rank before an initial is still a rank
        ("Richard de Beauchamp", "Richard Beauchamp"),  # a surname without its particle
    ],
)
def test_a_name_is_also_known_by_the_forms_people_write_it_in(name, alias) -> None:
    assert alias in name_aliases(name)


@pytest.mark.parametrize(
    ("name", "never"),
    [
        ("Joseph Ferdinand Leopold of Bavaria", "Ferdinand of Bavaria"),  # another duke
        ("Robert II of Dreux", "Robert of Dreux"),  # the regnal number is kept
        ("Aretha Louise Franklin", "Franklin"),  # one word names too many people
        ("Ed Wood", "Ed Wood"),  # the name itself is no alias
        ("Louis of Bavaria", "Lou of Bavaria"),  # a ruler keeps his given name
        ("Hugo Rafael Chávez Frías", "Hugo Rafael"),  # one surname is dropped, not two
        ("Hugo Rafael Chávez Frías", "Hugo Chávez"),  # nor varied once dropped
        ("Joseph Ferdinand Leopold of Bavaria", "Joseph Ferdinand Leopold"),  # of a place
        ("Ventura Pons", "Ventura"),  # two words are a given name and one surname
        ("Carl J. Valiquette", "Carl J."),  # no name ends with an initial
        ("Earl Spencer", "Spencer"),  # a rank before a surname is a rank
        ("Langston Hughes House", "Langston Hughes"),  # a house named after a person
        ("James Mercer Langston Hughes Society", "Langston Hughes Society"),
        ("Teatro Giuseppe Verdi", "Giuseppe Verdi"),  # a theatre named after him
    ],
)
def test_an_alias_keeps_what_tells_people_apart(name, never) -> None:
    assert never not in name_aliases(name)


@pytest.mark.parametrize(
    ("text", "subjects"),
    [
        ("Donald Muller (November 26, 1917 - December 12, 2012), known professionally as Don "
         "Medford, was an American director.", ("Donald Muller", "Don Medford")),
        ("William Gerald Paris (1925 – 1986) professionally known as Jerry Paris, was an actor.",
         ("William Gerald Paris", "Jerry Paris")),
        ("Ven mi corazón te llama is a 1942 Argentine film.", ("Ven mi corazón te llama",)),
        ("I Cover the Underworld is a 1955 American crime film.", ("I Cover the Underworld",)),
        ("H. Bruce Humberstone was a director. Humberstone was born in Buffalo.",
         ("H Bruce Humberstone",)),
        ("Hugh, Count of Brienne (died 1296) was a French nobleman.",
         ("Hugh, Count of Brienne",)),
        ("The mill closed. Additionally, he was a miller. Later, she was a baker.", ()),
        ('" Can\'t Forget You" is a single by Gloria Estefan.', ("Can't Forget You",)),
        ("Hirabayashi v. United States, 320 U.S. 81 (1943), was a case.",
         ("Hirabayashi v United States",)),  # a case name, not "United States"
    ],
)  # fmt: skip
def test_subjects_are_read_as_people_write_openings(text, subjects) -> None:
    assert text_subjects(text) == subjects


def _links(passages: list[Passage]) -> list[dict[int, float]]:
    built = build_structures(Corpus(passages), MultiHopSettings())
    return [built.links.targets(row) for row in range(len(passages))]


def test_a_shorter_form_of_a_subject_links_the_passage_that_writes_it() -> None:
    passages = [
        Passage("f", "Polish Wedding is a 1998 film directed by John Conolly.", "doc-1"),
        Passage("d", "Lieutenant Colonel John Augustus Conolly VC (30 May 1829 – 23 December "
                     "1888), born in Celbridge, was an Irish soldier.", "doc-2"),
        Passage("o", "The Organization is a 1971 film directed by Don Medford.", "doc-3"),
        Passage("m", "Donald Muller (November 26, 1917 - December 12, 2012), known "
                     "professionally as Don Medford, was a director.", "doc-4"),
    ]  # fmt: skip
    links = _links(passages)
    assert links[0] == {1: 1.0}
    assert links[2] == {3: 1.0}


def test_a_familiar_first_name_links_the_passage_that_writes_it() -> None:
    passages = [
        Passage("s", "Come Dance with Me is a 1959 song performed by Frank Sinatra.", "doc-1"),
        Passage("p", "Francis Albert Sinatra (December 12, 1915 – May 14, 1998) was an "
                     "American singer.", "doc-2"),
        Passage("t", "The Walls of Hell is a 1964 war film directed by Eddie Romero.", "doc-3"),
        Passage("r", "Edgar Sinco Romero (July 7, 1924 – May 28, 2013) was a Filipino film "
                     "director.", "doc-4"),
    ]  # fmt: skip
    links = _links(passages)
    assert links[0] == {1: 1.0}
    assert links[2] == {3: 1.0}


def test_an_alias_never_takes_a_name_from_the_passage_known_by_it() -> None:
    passages = [
        Passage("m", "The match was won by John Smith of Leeds.", "doc-1"),
        Passage("a", "John Robert Smith was a painter.", "doc-2"),
        Passage("b", "John Smith was a footballer.", "doc-3"),
    ]
    assert _links(passages)[0] == {2: 1.0}
    # without the footballer, the painter is the one person "John Smith" can mean
    assert _links(passages[:2])[0] == {1: 1.0}


def test_an_alias_two_people_share_links_neither() -> None:
    passages = [
        Passage("m", "The match was won by John Smith of Leeds.", "doc-1"),
        Passage("a", "John Robert Smith was a painter.", "doc-2"),
        Passage("b", "John Edward Smith was a judge.", "doc-3"),
    ]
    assert _links(passages)[0] == {}
    index = TitleIndex([("doc-2", "John Robert Smith"), ("doc-3", "John Edward Smith")])
    assert index.find("John Smith won.") == []
    assert [m.text for m in index.find("John Edward Smith won.")] == ["john edward smith"]


def test_aliases_are_read_for_subjects_not_for_titles() -> None:
    """A title is looked for as written: titled corpora link as before."""
    passages = [
        Passage("m", "The match was won by John Smith of Leeds.", "Match"),
        Passage("a", "John Robert Smith was a painter.", "John Robert Smith"),
    ]
    assert _links(passages)[0] == {}


class _Words:
    """A toy encoder: counts of a few words."""

    name, dim = "words", 4

    def encode(self, texts, *, show_progress=False):
        keys = ("film", "director", "born", "soldier")
        v = np.array([[t.lower().count(w) + 0.01 for w in keys] for t in texts], "float32")
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_multihop_finds_the_director_written_under_a_shorter_name_on_an_untitled_corpus():
    passages = [
        Passage("f", "Polish Wedding is a 1998 film directed by John Conolly.", "doc-1"),
        Passage("d", "Lieutenant Colonel John Augustus Conolly VC (30 May 1829 – 23 December "
                     "1888) was an Irish film director and soldier.", "doc-2"),
        Passage("x", "Rex Moll was born in Lyon. He was a film director.", "doc-3"),
        Passage("y", "Bea Lind is a film director born in Paris.", "doc-4"),
    ]  # fmt: skip
    retriever = MultiHopRetriever.from_corpus(Corpus(passages), _Words())
    found = retriever.retrieve(Query("Where was the director of film Polish Wedding born?"), k=2)
    assert [c.id for c in found] == ["f", "d"]


def test_a_questions_name_also_means_the_passage_known_by_it_as_an_alias() -> None:
    """A text that writes *John Smith* links the footballer named so, never the painter; a
    question may mean either, so both are named there (and neither beyond three people)."""
    index = TitleIndex(
        [("doc-2", "John Robert Smith"), ("doc-3", "John Smith"), ("doc-4", "Ann Lee")]
    )
    question = "Was John Smith older than Ann Lee?"
    [text, _] = index.mentions(question).mentions
    assert dict(text.referents) == {1: 1.0}
    [smith, lee] = index.mentions(question, aliases_too=True).mentions
    assert dict(smith.referents) == {0: 0.5, 1: 0.5} and dict(lee.referents) == {2: 1.0}
    middles = ("Abe", "Bob", "Cal", "Dan")
    crowded = TitleIndex([(f"doc-{i}", f"John {middle} Smith") for i, middle in enumerate(middles)])
    assert crowded.mentions(question, aliases_too=True).mentions == ()


def test_multihop_ranks_both_compared_people_when_one_is_known_by_an_alias() -> None:
    passages = [
        Passage("film", "Giuseppe Verdi is a 1938 Italian biographical film.", "doc-1"),
        Passage("verdi", "Giuseppe Fortunino Francesco Verdi (1813 – 1901) was an Italian "
                         "opera composer, once a soldier.", "doc-2"),
        Passage("thomas", "Charles Louis Ambroise Thomas (1811 – 1896) was a French opera "
                          "composer born in Metz.", "doc-3"),
        Passage("x", "Rex Moll was a film director born in Lyon.", "doc-4"),
        Passage("y", "Bea Lind is a film director born in Paris.", "doc-5"),
    ]  # fmt: skip
    retriever = MultiHopRetriever.from_corpus(Corpus(passages), _Words())
    question = Query("Where were Giuseppe Verdi and Ambroise Thomas born?")
    found = retriever.retrieve(question, k=3)
    assert {"verdi", "thomas"} <= {c.id for c in found}
