"""A soft hyphen or a zero-width character inside a word (a PDF's hyphenation point, a web
page's ``&shy;``) is read as if it were not there by every word reader, not only the title
and link readers (tests/multihop/test_multihop_links.py covers those)."""

from __future__ import annotations

import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge.queries import key_sentence
from rag_multihop.conversation.names import content_words, names_in
from rag_multihop.coop.unroll import check_unrolling
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.llm.prompts import UnrolledQuestion
from rag_multihop.multihop.headings import heading_name

INVISIBLE = ["\u00ad", "\u200b", "\u200d", "\ufeff"]


@pytest.mark.parametrize("mark", INVISIBLE)
def test_bm25_finds_a_word_split_by_an_invisible_character(mark: str) -> None:
    corpus = Corpus(
        [
            Passage("a", f"The lighthouse keeper kept a jour{mark}nal."),
            Passage("b", "The harbour master kept the ledger."),
        ]
    )
    found = BM25Retriever(corpus).retrieve(Query("journal"), k=2)
    assert [c.id for c in found] == ["a"]


@pytest.mark.parametrize("mark", INVISIBLE)
def test_conversation_names_and_words_ignore_invisible_characters(mark: str) -> None:
    text = f"Polish Wedding was directed by Theresa Con{mark}nelly in 1998."
    assert "Theresa Connelly" in names_in(text)
    assert content_words(f"di{mark}rected") == content_words("directed")


@pytest.mark.parametrize("mark", INVISIBLE)
def test_the_bridge_key_sentence_matches_a_split_word(mark: str) -> None:
    bridge = Passage("p", f"It is a film. It was di{mark}rected by Ann. It is long.")
    assert key_sentence("Who directed it?", bridge) == f"It was di{mark}rected by Ann."


@pytest.mark.parametrize("mark", INVISIBLE)
def test_an_unrolled_sub_question_repeating_the_question_is_dropped(mark: str) -> None:
    reply = UnrolledQuestion.model_validate(
        {
            "sub_questions": [f"Who di{mark}rected Rope?", "Where was he born?"],
            "chain": [{"head": "Rope", "relation": "directed by", "tail": "[ANSWER]"}],
        }
    )
    unrolling = check_unrolling("Who directed Rope?", reply)
    assert unrolling.sub_questions == ("Where was he born?",)
    assert "a sub-question repeated the question; dropped" in unrolling.issues


@pytest.mark.parametrize("mark", INVISIBLE)
def test_a_heading_with_an_invisible_character_still_reads_as_a_name(mark: str) -> None:
    assert heading_name(f"notes.md › Inter{mark}national Space Station") is not None
    assert heading_name(f"notes.md › inter{mark}national space station") is None
