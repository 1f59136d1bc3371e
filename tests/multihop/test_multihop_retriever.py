"""The multi-hop retriever on tiny corpora with known answers, and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.graph import GraphSettings
from rag_multihop.multihop import PAIR_SCORE, MultiHopRetriever, MultiHopSettings

PASSAGES = [
    Passage("pw", "Polish Wedding is a 1998 film directed by Theresa Connelly.", "Polish Wedding"),
    Passage(
        "tc", "Theresa Connelly is an American director born in Philadelphia.", "Theresa Connelly"
    ),
    Passage("cd", "Claire Danes is an American actress who starred in films.", "Claire Danes"),
    Passage("ph", "Philadelphia is a city in Pennsylvania.", "Philadelphia"),
    Passage("pw2", "Polish Wedding is a 2012 song about a wedding.", "Polish Wedding (song)"),
    Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", "Rope"),
    Passage("ah", "Alfred Hitchcock was an English director born in London.", "Alfred Hitchcock"),
    Passage("ln", "London is the capital of England.", "London"),
]


@pytest.fixture
def corpus() -> Corpus:
    return Corpus(PASSAGES)


@pytest.fixture
def retriever(corpus: Corpus, hashing_encoder) -> MultiHopRetriever:
    return MultiHopRetriever.from_corpus(corpus, hashing_encoder)


def _ids(retriever: MultiHopRetriever, text: str, k: int = 4) -> list[str]:
    return [c.id for c in retriever.retrieve(Query(text), k=k)]


def test_a_bridge_question_gets_the_named_film_and_the_page_it_names(retriever) -> None:
    result = retriever.run(Query("Where was the director of the film Polish Wedding born?"), k=4)
    assert result.trace.pair == ("pw", "tc")
    assert [c.id for c in result.candidates][:2] == ["pw", "tc"]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    first, second = result.candidates[:2]
    assert first.score == second.score == PAIR_SCORE
    assert first.signals["named"] == 1.0 and first.signals["first_hop"] == 1.0
    assert second.signals["link"] > 0 and second.signals["named"] == 0.0
    assert all(c.score <= 1.0 for c in result.candidates[2:])


def test_a_comparison_question_gets_both_named_passages(retriever) -> None:
    ids = _ids(retriever, "Were Claire Danes and Alfred Hitchcock born in the same country?")
    assert set(ids[:2]) == {"cd", "ah"}


def test_two_referents_of_one_mention_are_not_both_taken_as_named(retriever) -> None:
    result = retriever.run(Query("Who directed Polish Wedding?"), k=3)
    assert set(result.trace.pair) != {"pw", "pw2"}
    assert result.trace.mentions == (("polish wedding", ("pw", "pw2")),)


def test_a_qualified_name_means_the_namesake_whose_text_holds_the_qualifier(
    hashing_encoder,
) -> None:
    namesakes = Corpus(
        [
            Passage("fb", "David Elliot (born 1969) is a Scottish footballer.", "doc-1"),
            Passage("il", "David Elliot is a New Zealand illustrator and author.", "doc-2"),
            Passage("nz", "New Zealand is an island country.", "doc-3"),
        ]
    )
    retriever = MultiHopRetriever.from_corpus(namesakes, hashing_encoder)
    plain = retriever.run(Query("Where is David Elliot from?"), k=2).trace.mentions
    qualified = retriever.run(Query("Where is David Elliot (Illustrator) from?"), k=2)
    apposition = retriever.run(Query("Where is David Elliot, Illustrator Of Redwall from?"), k=2)
    unknown = retriever.run(Query("Where is David Elliot (Painter) from?"), k=2).trace.mentions
    assert plain == unknown == (("david elliot", ("fb", "il")),)
    assert qualified.trace.mentions == (("david elliot", ("il",)),)
    assert apposition.trace.mentions == (("david elliot", ("il",)),)
    assert qualified.candidates[0].id == "il"


def test_chains_continue_through_links_in_the_fill(retriever) -> None:
    ids = _ids(retriever, "What is London, where the director of Rope was born, the capital of?", 3)
    assert set(ids[:3]) == {"rope", "ah", "ln"}


def test_a_question_without_names_falls_back_to_similarity(corpus, hashing_encoder) -> None:
    retriever = MultiHopRetriever.from_corpus(corpus, hashing_encoder)
    ids = _ids(retriever, "capital of england", k=2)
    assert "ln" in ids


def test_top_k_does_not_depend_on_k(retriever) -> None:
    query = Query("Where was the director of the film Polish Wedding born?")
    assert _ids(retriever, query.text, k=3) == _ids(retriever, query.text, k=8)[:3]


def test_every_switch_still_returns_a_ranking(corpus, hashing_encoder) -> None:
    vectors = hashing_encoder.encode(corpus.texts())
    for field in (
        "pair",
        "title_links",
        "residual",
        "specificity",
        "exclusive_mentions",
        "graph_tail",
    ):
        retriever = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder, **{field: False})
        found = retriever.retrieve(Query("Who directed Polish Wedding?"), k=5)
        assert len(found) == 5 and len({c.id for c in found}) == 5, field
    retriever = MultiHopRetriever(corpus, vectors, entity_weight=0.0, context_weight=0.0)
    assert retriever.shared is None and retriever.graph_retriever is not None


def test_asking_for_more_than_the_corpus_returns_it_all(retriever) -> None:
    assert len(retriever.retrieve(Query("Who directed Rope?"), k=50)) == len(PASSAGES)


def test_the_query_and_the_vectors_are_not_changed(corpus, hashing_encoder) -> None:
    vectors = hashing_encoder.encode(corpus.texts())
    kept = vectors.copy()
    embedding = hashing_encoder.encode(["Who directed Rope?"])[0]
    query = Query("Who directed Rope?", embedding=embedding.copy())
    MultiHopRetriever(corpus, vectors).retrieve(query, k=3)
    np.testing.assert_array_equal(vectors, kept)
    np.testing.assert_array_equal(query.embedding, embedding)


def test_trace_to_dict_is_json_ready(retriever) -> None:
    import json

    trace = retriever.run(Query("Where was the director of Rope born?", id="q1"), k=3).trace
    data = json.loads(json.dumps(trace.to_dict()))
    assert data["query_id"] == "q1" and data["pair"] and data["candidates"] >= 2


# --------------------------------------------------------------------------- bad input


def test_bad_k_is_refused(retriever) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        retriever.retrieve(Query("Rope?"), k=0)


def test_a_query_without_embedding_needs_an_encoder(corpus, hashing_encoder) -> None:
    retriever = MultiHopRetriever(corpus, hashing_encoder.encode(corpus.texts()))
    with pytest.raises(ValueError, match="no embedding and no encoder was given"):
        retriever.retrieve(Query("Who directed Rope?"))


def test_a_query_of_the_wrong_dimension_or_with_nan_is_refused(retriever) -> None:
    with pytest.raises(ValueError, match="dimension 3, expected 64"):
        retriever.retrieve(Query("x", embedding=np.ones(3, dtype="float32")))
    bad = np.full(64, np.nan, dtype="float32")
    with pytest.raises(ValueError, match="NaN or inf"):
        retriever.retrieve(Query("x", embedding=bad))


def test_vectors_that_do_not_fit_the_corpus_are_refused(corpus, hashing_encoder) -> None:
    vectors = hashing_encoder.encode(corpus.texts())
    with pytest.raises(ValueError, match="got 7 vectors for 8 passages"):
        MultiHopRetriever(corpus, vectors[:7])
    broken = vectors.copy()
    broken[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"passage vectors contain NaN or inf values \(rows \[2\]"):
        MultiHopRetriever(corpus, broken)


def test_an_index_of_other_passages_is_refused(corpus, hashing_encoder) -> None:
    from rag_multihop.index.dense import DenseIndex

    vectors = hashing_encoder.encode(corpus.texts())
    other = DenseIndex.build([f"z{i}" for i in range(len(corpus))], vectors)
    with pytest.raises(ValueError, match="the index holds ids not in the corpus"):
        MultiHopRetriever(corpus, vectors, index=other)
    with pytest.raises(ValueError, match="index holds 2 vectors"):
        MultiHopRetriever(corpus, vectors, index=DenseIndex.build(["a", "b"], vectors[:2]))


def test_an_index_in_another_order_ranks_as_one_in_the_corpus_order(
    corpus, hashing_encoder
) -> None:
    """The retriever reads rows from an index in the corpus's order and ids from another."""
    from rag_multihop.index.dense import DenseIndex

    vectors = hashing_encoder.encode(corpus.texts())
    backwards = DenseIndex.build(corpus.ids[::-1], vectors[::-1])
    mine = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder)
    theirs = MultiHopRetriever(corpus, vectors, index=backwards, encoder=hashing_encoder)
    for text in ("Who directed Polish Wedding?", "Where was Theresa Connelly born?"):
        query = Query(text)
        assert [(c.id, c.score) for c in theirs.retrieve(query, k=5)] == [
            (c.id, c.score) for c in mine.retrieve(query, k=5)
        ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("candidates", 0, "candidates must be a positive integer, got 0"),
        ("first_hops", -1, "first_hops must be a positive integer, got -1"),
        ("context_weight", 1.5, r"context_weight must be in \[0, 1\], got 1.5"),
        ("entity_weight", -0.1, r"entity_weight must be in \[0, 1\], got -0.1"),
        ("pair", "yes", "pair must be True or False, got 'yes'"),
        ("graph_tail", 1, "graph_tail must be True or False, got 1"),
        ("ppr", "fast", r"ppr must be one of \['auto', 'power', 'push'\], got 'fast'"),
        ("graph_cap", 0, "graph_cap must be a positive integer, got 0"),
        ("graph_entity_share", 1.5, r"graph_entity_share must be in \[0, 1\], got 1.5"),
        ("graph_seed_passages", 0, "graph_seed_passages must be a positive integer, got 0"),
        ("tail_calibration", "zeta", r"tail_calibration must be one of \[.*'pit'.*\]"),
        ("tail_fusion", "mean", r"tail_fusion must be one of \[.*'boltzmann'.*\]"),
    ],
)
def test_settings_name_the_bad_value(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MultiHopSettings(**{field: value})


def test_graph_tail_keeps_its_own_seed_share(corpus, hashing_encoder) -> None:
    vectors = hashing_encoder.encode(corpus.texts())
    default = MultiHopRetriever(corpus, vectors).graph_retriever
    assert default is not None and default.settings.entity_share == 0.5
    assert GraphSettings().entity_share == 0.75
    tuned = MultiHopRetriever(corpus, vectors, graph_entity_share=0.25).graph_retriever
    assert tuned is not None and tuned.settings.entity_share == 0.25


def test_settings_round_trip_and_overrides(corpus, hashing_encoder) -> None:
    settings = MultiHopSettings(first_hops=3)
    assert MultiHopSettings(**dataclasses.asdict(settings)) == settings
    retriever = MultiHopRetriever(
        corpus, hashing_encoder.encode(corpus.texts()), settings=settings, graph_tail=False
    )
    assert retriever.settings.first_hops == 3 and retriever.settings.graph_tail is False
    with pytest.raises(TypeError):
        MultiHopRetriever(corpus, hashing_encoder.encode(corpus.texts()), no_such_knob=1)


BRIDGE = "Where was the director of the film Polish Wedding born?"


def test_allowed_restricts_every_step_to_those_passages(retriever) -> None:
    allowed = {"pw", "cd", "ph", "rope", "ln"}  # the director's page "tc" is excluded
    result = retriever.run(Query(BRIDGE), k=8, allowed=allowed)
    ids = [c.id for c in result.candidates]
    assert set(ids) <= allowed and ids[0] == "pw" and "tc" not in result.trace.pair
    assert result.trace.mentions == (("polish wedding", ("pw",)),)  # "pw2" is not allowed
    assert result.trace.candidates <= len(allowed)


def test_allowing_every_passage_changes_nothing(retriever, corpus) -> None:
    everything = retriever.run(Query(BRIDGE), k=8, allowed=set(corpus.ids))
    plain = retriever.run(Query(BRIDGE), k=8)
    assert [(c.id, c.score) for c in everything.candidates] == [
        (c.id, c.score) for c in plain.candidates
    ]


def test_allowing_nothing_returns_nothing(retriever) -> None:
    result = retriever.run(Query(BRIDGE), k=4, allowed=[])
    assert result.candidates == [] and result.trace.pair == ()
    assert result.trace.mentions == (("polish wedding", ()),)


def test_allowed_must_be_a_collection_of_corpus_ids(retriever) -> None:
    with pytest.raises(ValueError, match=r"allowed holds 1 ids that are not in the corpus.*'zz'"):
        retriever.run(Query(BRIDGE), allowed={"pw", "zz"})
    with pytest.raises(TypeError, match="allowed must be a collection of passage ids.*got str"):
        retriever.run(Query(BRIDGE), allowed="pw")


def test_every_setting_is_a_typed_keyword_of_the_constructor() -> None:
    import inspect

    parameters = inspect.signature(MultiHopRetriever).parameters
    for field in dataclasses.fields(MultiHopSettings):
        assert parameters[field.name].kind is inspect.Parameter.KEYWORD_ONLY, field.name
        assert parameters[field.name].default is None, field.name
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def test_the_tail_fuses_under_its_settings(corpus, hashing_encoder) -> None:
    vectors = hashing_encoder.encode(corpus.texts())
    query = Query("Where was the director of the film Polish Wedding born?")
    boltzmann = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder).run(query, k=8)
    rrf = MultiHopRetriever(
        corpus, vectors, encoder=hashing_encoder, tail_calibration="minmax", tail_fusion="rrf"
    ).run(query, k=8)
    assert [c.id for c in boltzmann.candidates[:2]] == [c.id for c in rrf.candidates[:2]]
    tail = [c for c in rrf.candidates[2:] if "second_hop" not in c.signals]
    assert tail and all({"fused", "dense"} <= set(c.signals) for c in tail)
    assert all({"fill_cal", "graph_cal"} & set(c.signals) for c in tail)
    fused = [c for c in boltzmann.candidates[2:] if "second_hop" not in c.signals]
    assert [c.score for c in tail] != [c.score for c in fused]


def test_one_seed_passage_seeds_the_tail_walk_with_the_first_hop_only(corpus, hashing_encoder):
    vectors = hashing_encoder.encode(corpus.texts())
    walker = MultiHopRetriever(corpus, vectors, graph_seed_passages=1).graph_retriever
    assert walker is not None and walker.settings.seed_top_n == 1


def test_arun_and_aretrieve_match_run(retriever) -> None:
    import asyncio

    query = Query("Where was the director of the film Polish Wedding born?")
    result = asyncio.run(retriever.arun(query, k=4, allowed=["pw", "tc", "ph"]))
    assert result.candidates == retriever.run(query, k=4, allowed=["pw", "tc", "ph"]).candidates
    assert asyncio.run(retriever.aretrieve(query, k=4)) == retriever.retrieve(query, k=4)
