from __future__ import annotations

import dataclasses

import pytest

from rag_multihop import Candidate, Corpus, Passage, Query, rank_candidates


def test_passage_embedding_text_prepends_title():
    assert Passage("p", "body", title="T").embedding_text == "T\nbody"
    assert Passage("p", "body").embedding_text == "body"


def test_dataclasses_are_frozen_and_metadata_is_read_only():
    p = Passage("p", "x", metadata={"a": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.text = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.metadata["a"] = 2  # type: ignore[index]


def test_passage_metadata_is_copied_from_the_callers_dict():
    meta = {"a": 1}
    p = Passage("p", "x", metadata=meta)
    meta["a"] = 99
    assert p.metadata["a"] == 1


@pytest.mark.parametrize("bad", ["", None, 3])
def test_passage_rejects_bad_ids(bad):
    with pytest.raises(ValueError, match="Passage.id"):
        Passage(bad, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "   "])
def test_query_rejects_empty_text(bad):
    with pytest.raises(ValueError, match="Query.text"):
        Query(bad)


def test_with_score_returns_new_candidate_and_keeps_old_signals():
    c = Candidate(Passage("a", "x"), 0.5, signals={"dense": 0.5})
    c2 = c.with_score(0.9, association=0.7)
    assert c.score == 0.5 and dict(c.signals) == {"dense": 0.5}
    assert c2.score == 0.9 and dict(c2.signals) == {"dense": 0.5, "association": 0.7}


def test_rank_candidates_orders_by_score_then_id_and_truncates():
    cands = [Candidate(Passage(i, "x"), s) for i, s in [("b", 0.5), ("a", 0.5), ("c", 0.9)]]
    ranked = rank_candidates(cands, top_n=2)
    assert [(c.id, c.rank) for c in ranked] == [("c", 1), ("a", 2)]
    assert all(c.rank == 0 for c in cands)


def test_corpus_rejects_empty_and_duplicates():
    with pytest.raises(ValueError, match="empty"):
        Corpus([])
    with pytest.raises(ValueError, match="duplicate passage id.*'a'"):
        Corpus([Passage("a", "x"), Passage("a", "y"), Passage("b", "z")])


def test_corpus_rejects_what_is_not_a_passage():
    with pytest.raises(TypeError, match="item 1 is a dict"):
        Corpus([Passage("a", "x"), {"id": "b", "text": "y"}])
    with pytest.raises(TypeError, match="not one string"):
        Corpus("ab")


def test_methods_take_a_list_of_passages_as_their_corpus():
    import numpy as np

    from rag_multihop.multihop import MultiHopRetriever

    passages = [
        Passage("a", "Rope is a film.", "Rope"),
        Passage("b", "Psycho is a film.", "Psycho"),
    ]
    retriever = MultiHopRetriever(passages, np.eye(2))
    assert isinstance(retriever.corpus, Corpus) and retriever.corpus.ids == ["a", "b"]
    found = retriever.retrieve(Query("Which film is Rope?", embedding=np.array([1.0, 0.0])), k=2)
    assert found[0].id == "a"


def test_corpus_lookup_by_id_and_position():
    corpus = Corpus([Passage("a", "x", title="A"), Passage("b", "y")])
    assert corpus["b"].text == "y" and corpus[0].id == "a"
    assert "a" in corpus and "zz" not in corpus
    assert corpus.texts() == ["A\nx", "y"]
    with pytest.raises(KeyError, match="unknown passage id 'zz'"):
        corpus.index_of("zz")


@pytest.mark.parametrize("field", ["id", "text", "title"])
def test_passage_rejects_text_that_is_not_valid_unicode(field):
    values = {"id": "p", "text": "ok", "title": "T"} | {field: "caf" + chr(0xD800)}
    with pytest.raises(ValueError, match=rf"Passage\.{field} .*not valid Unicode.*position 3"):
        Passage(values["id"], values["text"], values["title"])
