"""Pair sources, deduplication, validation, statistics, label-free pairs and leakage."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop import Corpus, Passage
from rag_multihop.association.pairs import PairSet, corpus_pairs, leakage, load_pairs
from rag_multihop.eval.datasets import QAExample


def test_groups_give_every_pair_once_in_canonical_order():
    pairs = PairSet.from_groups([["c", "a", "b"], ["b", "a", "a"]], source="sessions")
    assert pairs.pairs == (("a", "c"), ("b", "c"), ("a", "b"))
    assert pairs.sources == {"sessions": 3}
    assert pairs.dropped_duplicates == 1


def test_from_gold_uses_each_questions_gold_ids():
    questions = [
        QAExample("q1", "?", (), ("x", "y", "z"), False),
        QAExample("q2", "?", (), ("y",), False),
    ]
    assert len(PairSet.from_gold(questions)) == 3


def test_self_pairs_and_repeats_are_dropped_and_counted():
    pairs = PairSet.from_pairs([("a", "b"), ("b", "a"), ("c", "c")])
    assert pairs.pairs == (("a", "b"),)
    assert (pairs.dropped_self, pairs.dropped_duplicates) == (1, 1)


def test_union_keeps_first_source_and_counts_overlap():
    gold = PairSet.from_pairs([("a", "b"), ("b", "c")], source="gold")
    other = PairSet.from_pairs([("c", "b"), ("c", "d")], source="corpus")
    both = gold | other
    assert both.pairs == (("a", "b"), ("b", "c"), ("c", "d"))
    assert both.sources == {"gold": 2, "corpus": 1}
    assert both.dropped_duplicates == 1


def test_stats():
    stats = PairSet.from_pairs([("a", "b"), ("a", "c"), ("a", "d")]).stats()
    assert (stats.pairs, stats.directed_pairs, stats.passages) == (3, 6, 4)
    assert (stats.max_degree, stats.mean_degree) == (3, 1.5)
    assert stats.to_dict()["sources"] == {"user": 3}


def test_validate_lists_the_first_unknown_ids():
    pairs = PairSet.from_pairs([(f"u{i}", "a") for i in range(8)])
    with pytest.raises(ValueError, match=r"8 passage id\(s\) that are not in the corpus, e.g. "):
        pairs.validate({"a"})
    try:
        pairs.validate({"a"})
    except ValueError as exc:
        assert "['u0', 'u1', 'u2', 'u3', 'u4']" in str(exc)


def test_rows_map_ids_to_positions():
    rows = PairSet.from_pairs([("b", "a")]).rows({"a": 0, "b": 1})
    np.testing.assert_array_equal(rows, [[0, 1]])


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([("a",)], r"user pair 0 must be two passage ids"),
        (["ab"], r"user pair 0 must be two passage ids"),
        ([("a", "")], r"user pair 0: passage ids must be non-empty strings"),
        ([("a", 3)], r"user pair 0: passage ids must be non-empty strings, got 3"),
    ],
)
def test_bad_pairs(pairs, message):
    with pytest.raises(ValueError, match=message):
        PairSet.from_pairs(pairs)


def test_shuffled_keeps_first_ids_and_is_seeded():
    gold = PairSet.from_pairs([(f"a{i}", f"b{i}") for i in range(50)], source="gold")
    one, two = gold.shuffled(seed=1), gold.shuffled(seed=1)
    assert one == two and one != gold.shuffled(seed=2)
    assert one.sources == {"shuffled": len(one)}
    assert len(set(one.pairs) & set(gold.pairs)) < 5


def test_load_pairs_json_and_jsonl(tmp_path):
    as_json = tmp_path / "pairs.json"
    as_json.write_text(json.dumps([["a", "b"], ["b", "c", "d"]]))
    assert len(load_pairs(as_json)) == 4
    assert load_pairs(as_json).sources == {"pairs.json": 4}
    as_jsonl = tmp_path / "sessions.jsonl"
    as_jsonl.write_text('["a", "b"]\n\n["c", "d"]\n')
    assert load_pairs(as_jsonl, source="clicks").sources == {"clicks": 2}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "holds no records"),
        ('{"a": 1}', r"line 1 must be a list of at least two passage ids, got \{'a': 1\}"),
        ('[["a"]]', r"record 0 must be a list of at least two passage ids"),
        ("[1, 2]", r"line 1: passage ids must be non-empty strings, got 1"),  # one pair
        ('["a", "b"\n', r"is neither JSON \(.*\) nor JSON Lines \(line 1"),
    ],
)
def test_load_pairs_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_pairs(path)


def test_load_pairs_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="pairs file not found"):
        load_pairs(tmp_path / "nope.json")


CORPUS = Corpus(
    [
        Passage(
            "film",
            "Cape Fear is a thriller directed by Jack Lee Thompson.",
            title="Cape Fear (1962 film)",
        ),
        Passage("jlt", "Jack Lee Thompson was born in Bristol.", title="Jack Lee Thompson"),
        Passage("bristol", "Bristol is a city in England.", title="Bristol"),
        Passage(
            "remake", "A remake of Cape Fear was released in 1991.", title="Cape Fear (1991 film)"
        ),
        Passage("list", "Films: Cape Fear, Bristol, Jack Lee Thompson.", title="Lists"),
        Passage("x", "Nothing here.", title="Ab"),
    ]
)


def test_title_mentions_are_label_free_pairs():
    # "Cape Fear" (two passages) is ambiguous above max_passages_per_name=1 and skipped.
    pairs = corpus_pairs(CORPUS, max_mentions=1, max_passages_per_name=1, max_name_share=1.0)
    assert set(pairs.pairs) == {("film", "jlt"), ("bristol", "jlt")}
    assert pairs.sources == {"title-mention": 2}


def test_ambiguous_names_and_list_passages():
    # "Cape Fear" names two passages: kept with max_passages_per_name=2 ...
    pairs = corpus_pairs(CORPUS, max_mentions=2, max_passages_per_name=2, max_name_share=1.0)
    assert ("film", "remake") in pairs.pairs
    # ... and a passage naming more than max_mentions titles contributes nothing.
    assert not any("list" in pair for pair in pairs.pairs)
    assert any(
        "list" in pair for pair in corpus_pairs(CORPUS, max_mentions=10, max_name_share=1.0).pairs
    )


def test_co_mention_pairs_titles_named_together():
    pairs = corpus_pairs(CORPUS, ["co-mention"], max_mentions=4, max_name_share=1.0)
    assert ("bristol", "jlt") in pairs.pairs  # both named in "list"
    assert pairs.sources == {"co-mention": len(pairs)}


def test_names_mentioned_by_too_many_passages_are_hubs():
    # "Jack Lee Thompson" is named by two passages: above a limit of one, it is skipped.
    pairs = corpus_pairs(CORPUS, max_mentions=10, max_name_share=0.01)
    assert not any("jlt" in pair for pair in pairs.pairs)


def test_unknown_relation_lists_registered_names():
    with pytest.raises(ValueError, match=r"relations must be a non-empty list of \['co-mention', "):
        corpus_pairs(CORPUS, ["links"])


def test_leakage_shares():
    trained = PairSet.from_pairs([("a", "b"), ("c", "d")])
    report = leakage(trained, [("a", "b"), ("a", "e"), ("f", "g")])
    assert (report.eval_gold_pairs, report.gold_pairs_seen) == (3, pytest.approx(1 / 3, abs=1e-4))
    assert (report.eval_gold_passages, report.gold_passages_seen) == (5, 0.4)
    assert leakage(trained, []).gold_pairs_seen == 0.0
