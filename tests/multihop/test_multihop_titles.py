"""Title variants, tokens and mentions: known answers on hand-built titles and texts."""

from __future__ import annotations

import pytest

from rag_multihop.multihop.titles import TitleIndex, name_key, title_tokens, title_variants


def test_tokens_decode_html_and_read_ampersand_as_and() -> None:
    assert [t for _, t in title_tokens("Will &amp; Grace")] == ["will", "and", "grace"]
    assert name_key("Tunnels & Trolls") == name_key("Tunnels and Trolls")


def test_dashes_split_the_same_way_in_titles_and_texts() -> None:
    index = TitleIndex(["2011–12 VCU Rams men's basketball team"])
    found = index.find("The 2011–12 VCU Rams men's basketball team won.")
    assert [sorted(m.referents) for m in found] == [[0]]


def test_variants_drop_the_qualifier_and_the_head_after_a_comma() -> None:
    assert title_variants("Seven Women (1944 film)") == {
        "seven women 1944 film": (),
        "seven women": ("1944 film",),
    }
    assert title_variants("John Ernest, Duke of Saxe-Eisenach")["john ernest"] == (
        "duke of saxe eisenach",
    )
    assert title_variants("Ox") == {}  # shorter than three characters: never looked for


def test_longest_span_wins_and_spans_do_not_overlap() -> None:
    index = TitleIndex(["New South Wales", "Shelly Beach, New South Wales", "Shelly"])
    found = index.find("Which city lies south of Shelly Beach, New South Wales?")
    assert [(m.text, dict(m.referents)) for m in found] == [
        ("shelly beach new south wales", {1: 1.0})
    ]


def test_a_span_names_every_passage_of_its_key_unless_a_qualifier_decides() -> None:
    index = TitleIndex(["Boston", "Boston, Lincolnshire", "Lincolnshire Wolds"])
    (plain,) = index.find("He moved to Boston in 1990.")
    assert dict(plain.referents) == {0: 0.5, 1: 0.5}
    (decided, *_) = index.find("Kirton is near Boston, in Lincolnshire.")
    assert dict(decided.referents) == {1: 1.0}


def test_only_capitalised_or_numeric_spans_count() -> None:
    index = TitleIndex(["Film", "1917 (2019 film)"])
    assert index.find("a film about war") == []
    assert [m.text for m in index.find("He saw 1917 twice.")] == ["1917"]


def test_mentions_report_token_positions_and_tokens() -> None:
    index = TitleIndex(["Polish Wedding"])
    result = index.mentions("Who directed Polish Wedding?")
    (mention,) = result.mentions
    assert result.tokens[mention.start : mention.end] == ("polish", "wedding")


@pytest.mark.parametrize("text", ["", "   ", "?!", "the of and"])
def test_texts_without_titles_give_no_mentions(text: str) -> None:
    assert TitleIndex(["Rope", "Alfred Hitchcock"]).find(text) == []


def test_empty_titles_are_never_found_and_bad_max_words_is_refused() -> None:
    assert TitleIndex(["", ""]).find("Anything At All") == []
    with pytest.raises(ValueError, match="max_words must be a positive integer, got 0"):
        TitleIndex(["Rope"], max_words=0)


def test_a_long_text_is_scanned_linearly() -> None:
    index = TitleIndex([f"Person {i}" for i in range(2000)])
    text = " ".join(f"Person {i} met Person {i + 1}." for i in range(0, 1000, 2))
    assert len(index.find(text)) == 1000


def test_a_passage_can_be_known_by_several_names() -> None:
    from rag_multihop.multihop.titles import TitleIndex

    index = TitleIndex([("doc-1", "Ed Wood", "Humaya River"), "Tim Burton"])
    found = index.find("Did Ed Wood fish in the Humaya River with Tim Burton?")
    assert [(m.text, sorted(m.referents)) for m in found] == [
        ("ed wood", [0]),
        ("humaya river", [0]),
        ("tim burton", [1]),
    ]
