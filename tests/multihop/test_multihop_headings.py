"""Folder titles ``"<file> › <heading>"``: the heading is a name of the passage."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_multihop import Corpus, Passage
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.multihop.headings import heading_name, split_title
from rag_multihop.multihop.subjects import passage_names
from rag_multihop.testing import HashingEncoder


@pytest.fixture(autouse=True)
def core_methods_only(monkeypatch):
    """Skip importing the installed integrations' peer methods (slow, not under test here)."""
    import rag_multihop.eval.methods as methods

    assert methods.multihop
    monkeypatch.setattr(methods, "_entry_points_loaded", True)


@pytest.mark.parametrize(
    ("title", "heading"),
    [
        ("notes › Marit Hallendor", "Marit Hallendor"),
        ("notes.md › The Salt Lantern", "The Salt Lantern"),
        ("history › William I of Württemberg", "William I of Württemberg"),
        ("rope works › Later years", None),  # sentence case: a section, not a name
        ("report › page 3", None),  # a PDF page
        ("report › Page 12", None),
        ("Marit Hallendor", None),  # no separator: the title is the name, as before
        ("notes › ", None),
    ],
)
def test_a_heading_is_a_name_when_it_reads_as_one(title, heading) -> None:
    assert heading_name(title) == heading


def test_split_title_at_the_first_separator() -> None:
    assert split_title("a › b › C") == ("a", "b › C")
    assert split_title("Boston, Lincolnshire") == ("Boston, Lincolnshire", None)


def test_the_heading_is_known_beside_the_whole_title() -> None:
    known = passage_names(
        Passage("n#2", "She was born in Oslo in 1870.", "notes › Marit Hallendor")
    )
    assert known == ("notes › Marit Hallendor", "Marit Hallendor")


def test_subjects_are_read_when_the_heading_is_no_name() -> None:
    passage = Passage("r#3", "Tor Ekland was a rope maker. He worked in Bergen.", "report › page 3")
    assert passage_names(passage) == ("report › page 3", "Tor Ekland")
    # a page title sharing a word ("page") with its text still gets its subjects read
    paged = Passage("r#4", "Tor Ekland was a rope maker on page one.", "report › page 4")
    assert passage_names(paged) == ("report › page 4", "Tor Ekland")


def test_titles_without_a_heading_are_read_as_before() -> None:
    assert passage_names(Passage("x", "Ed Wood is a 1994 film.", "Ed Wood (film)")) == (
        "Ed Wood (film)",
    )


def test_multihop_links_folder_passages_by_their_headings() -> None:
    # the demo set titled as a folder reader titles it: "<file> › <heading>"
    titled = load_demo_dataset()
    foldered = replace(
        titled,
        corpus=Corpus(
            [replace(p, title=f"notes-{i % 7} › {p.title}") for i, p in enumerate(titled.corpus)]
        ),
    )
    assert all(heading_name(p.title) for p in foldered.corpus)
    ks = (2, 5)
    reference = run_benchmark(titled, ["multihop"], encoder=HashingEncoder(), ks=ks)
    result = run_benchmark(
        foldered, ["dense", "multihop", "bridge"], encoder=HashingEncoder(), ks=ks
    )
    ours, dense = result.methods["multihop"].recall, result.methods["dense"].recall
    # (the whole title as the one name: 0.30 / 0.59, the dense top 2)
    assert ours[2] >= reference.methods["multihop"].recall[2] - 0.02
    assert ours[2] > dense[2] + 0.3 and ours[5] > dense[5] + 0.3
    # the bridge judge names candidates by their headings too (was the dense order)
    assert result.methods["bridge"].recall[2] > dense[2] + 0.1
