"""Title links, their weights, specificity and contexts; shared entities."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.graph.build import build_entity_graph
from rag_multihop.multihop.links import (
    LinkGraph,
    SharedEntities,
    may_share_stems,
    specificity,
    stems,
    text_stems,
    token_stems,
)
from rag_multihop.multihop.retriever import MultiHopRetriever
from rag_multihop.multihop.titles import TitleIndex, title_tokens
from rag_multihop.store import CorpusIndex


def _corpus() -> Corpus:
    return Corpus(
        [
            Passage(
                "pw", "Polish Wedding is a film directed by Theresa Connelly.", "Polish Wedding"
            ),
            Passage("tc", "Theresa Connelly was born in Philadelphia.", "Theresa Connelly"),
            Passage("ph", "Philadelphia is a city.", "Philadelphia"),
            Passage("ed", "Ed Wood directed films. Ed Wood (film) is about him.", "Ed Wood"),
            Passage("edf", "It is a 1994 biopic about Ed Wood.", "Ed Wood (film)"),
            Passage("x", "Philadelphia and Philadelphia again.", "Other"),
        ]
    )


def _links(corpus: Corpus) -> LinkGraph:
    return LinkGraph.build(corpus, TitleIndex([p.title for p in corpus]))


def test_links_point_from_the_naming_passage_to_the_named_one() -> None:
    links = _links(_corpus())
    assert links.targets(0) == {1: 1.0}  # Polish Wedding -> Theresa Connelly
    assert links.targets(1) == {2: 1.0}
    assert links.targets(2) == {}  # a passage never links to itself
    assert links.targets(5) == {2: 1.0}  # a name said twice is one link


@pytest.mark.parametrize("invisible", ["\u00ad", "\u200b", "\u200d", "\ufeff"])
def test_an_invisible_character_inside_a_name_does_not_split_it(tmp_path, invisible) -> None:
    # a PDF's soft hyphen or a web page's zero-width space, in the text and in the question
    named = f"Polish Wed{invisible}ding is a film directed by Theresa Con{invisible}nelly."
    corpus = Corpus([Passage("pw", named, "Polish Wedding"), *list(_corpus())[1:]])
    assert _links(corpus).targets(0) == {1: 1.0}
    index = CorpusIndex.build(tmp_path / "idx", list(corpus), np.eye(len(corpus), 8))
    assert index.snapshot().link_graph.targets(0) == {1: 1.0}
    retriever = MultiHopRetriever(corpus, np.eye(len(corpus), 8))
    question = Query(f"Who directed Polish Wed{invisible}ding?", embedding=np.eye(8)[5])
    assert retriever.run(question, k=2).trace.mentions == (("polish wedding", ("pw",)),)


def test_an_ambiguous_name_splits_its_weight_and_qualifiers_decide() -> None:
    links = _links(_corpus())
    assert links.targets(3) == {4: 1.0}  # "Ed Wood (film)" names the film; "Ed Wood" is itself
    assert links.targets(4) == {3: 0.5}  # "Ed Wood": the person or the film itself


def test_contexts_hold_the_stems_around_the_name() -> None:
    links = _links(_corpus())
    assert links.context(0, 1) >= {"direc", "film"}
    assert links.context(1, 0) == frozenset()  # no link, no context


def test_specificity_is_an_idf_of_in_links() -> None:
    links = _links(_corpus())
    # Philadelphia is named by two passages, Theresa Connelly by one: less specific
    assert links.specificity[2] < links.specificity[1]
    assert specificity(np.array([0]), 1)[0] == pytest.approx(1.0)  # a one-passage corpus
    values = specificity(np.array([0, 4, 9]), 10)
    assert values[0] == pytest.approx(1.0) and values[2] == pytest.approx(0.0)


def test_stems_drop_function_words_and_numbers() -> None:
    assert stems(["the", "director", "of", "1998", "films"]) == frozenset({"direc", "films"})


def test_a_title_index_of_another_corpus_is_refused() -> None:
    corpus = _corpus()
    with pytest.raises(ValueError, match="title index has 2 titles but the corpus 6 passages"):
        LinkGraph.build(corpus, TitleIndex(["a", "b"]))
    with pytest.raises(ValueError, match="window must be a positive integer"):
        LinkGraph.build(corpus, TitleIndex([p.title for p in corpus]), window=0)


def test_shared_entities_relate_passages_by_specific_names_and_skip_hubs() -> None:
    corpus = Corpus(
        [
            Passage("a", "Rex Stout lived in Brewster.", "A"),
            Passage("b", "Brewster is a town.", "B"),
            Passage("c", "Rex Stout wrote novels in America.", "C"),
            Passage("d", "America is large.", "D"),
            Passage("e", "America again.", "E"),
        ]
    )
    graph = build_entity_graph(corpus)
    shared = SharedEntities.from_graph(graph)
    related = shared.related(0)
    assert set(related) == {1, 2}
    hubless = SharedEntities.from_graph(graph, max_passages=1)
    assert hubless.related(0) == {}  # every entity is named twice: all are hubs now
    assert SharedEntities.from_graph(graph).related(3)[4] == pytest.approx(
        specificity(np.array([2]), 5)[0]
    )
    with pytest.raises(ValueError, match="max_passages must be a positive integer"):
        SharedEntities.from_graph(graph, max_passages=0)


@pytest.mark.parametrize(
    "text",
    [
        "Rope was directed by Alfred Hitchcock in 1948.",
        "Will &amp; Grace's 2011–12 season & more",
        "",
        "___ --- !!!",
        "naïve café, İstanbul, Straße, ǅemal; 10,000 of the 1990s",
    ],
)
def test_text_stems_are_the_stems_of_the_title_tokens(text) -> None:
    expected = token_stems([token for _, token in title_tokens(text)])
    assert text_stems(text) == expected
    assert text_stems(text) == expected  # memoised words give the same again


@pytest.mark.parametrize(
    "text",
    [
        "Rope was directed by Alfred Hitchcock in 1948.",
        "Will &amp; Grace's 2011–12 season & more",
        "DIRECTOR Hitchcock's BORN-AGAIN film, 1948's best",
        "naïve café, İstanbul, Straße, ǅemal; 10,000 of the 1990s",
        "",
    ],
)
def test_a_text_ruled_out_shares_no_stem_with_the_question(text) -> None:
    """``may_share_stems`` is False only when the text's stems miss every question stem
    (each stem of the text asked about alone, and stems the text lacks)."""
    own = set(text_stems(text)) - {None}
    asked = [frozenset({stem}) for stem in own] + [
        frozenset({"born"}),
        frozenset({"cafe", "istan"}),
        frozenset({"strass", "grace"}),
        frozenset({"zzzz"}),
    ]
    for question in asked:
        if not may_share_stems(text, question):
            assert not own & question, (text, question)
    assert all(may_share_stems(text, frozenset({stem})) for stem in own)


def test_context_overlaps_are_the_overlaps_of_the_contexts() -> None:
    corpus = _corpus()
    links = LinkGraph.build(corpus, TitleIndex([p.title for p in corpus]))
    question = frozenset({"direc", "born"})
    assert links.context_overlaps(0, [1], question).tolist() == [0.5]
    assert links.context_overlaps(0, [1], frozenset()).tolist() == [0.0]
    assert links.context_overlaps(0, [], question).shape == (0,)
