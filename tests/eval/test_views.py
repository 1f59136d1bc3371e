"""Corpus views (titled / untitled / chunked): gold mapping, determinism, recall of split gold."""

from __future__ import annotations

import itertools

import pytest

from rag_multihop import Corpus, Passage
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.metrics import all_recall_at_k, last_hop_recall_at_k, recall_at_k
from rag_multihop.eval.report import to_json
from rag_multihop.eval.splits import split_dataset
from rag_multihop.eval.views import ViewSettings, apply_view, sentence_spans
from rag_multihop.testing import HashingEncoder

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
]


def _text(tag: str, sentences: int, words: int = 6) -> str:
    return " ".join(
        " ".join(f"{tag}{i}{w}" for w in WORDS[:words]).capitalize() + "." for i in range(sentences)
    )


def _dataset() -> Dataset:
    passages = [Passage(f"T{i}", _text(f"t{i}", 1 + i % 3), f"T{i}") for i in range(12)]
    # MuSiQue-like: a second passage sharing a title.
    passages.append(Passage("T3#2", _text("t3b", 2), "T3"))
    questions = (
        *tuple(
            QAExample(f"q{i}", f"question {i}?", ("x",), (f"T{i}", f"T{(i + 5) % 12}"), i % 2 == 0)
            for i in range(10)
        ),
        QAExample("q10", "shared title?", ("x",), ("T3#2", "T4"), False),
    )
    return Dataset("toy", Corpus(passages), questions, "native")


def _by_text(corpus: Corpus) -> dict[str, str]:
    return {p.text: p.id for p in corpus}


def test_titled_is_the_dataset_as_loaded() -> None:
    data = _dataset()
    titled = apply_view(data, ViewSettings())
    assert titled.corpus is data.corpus and titled.questions == data.questions
    assert dict(titled.view) == {"name": "titled"}


def test_untitled_replaces_titles_by_opaque_ids_consistently_in_the_gold() -> None:
    data = _dataset()
    view = apply_view(data, ViewSettings("untitled"))
    assert [p.text for p in view.corpus] == [p.text for p in data.corpus]
    assert all(p.title.startswith("doc-") and p.id.startswith(p.title) for p in view.corpus)
    assert not {p.title for p in view.corpus} & {p.title for p in data.corpus}
    # passages sharing a title share the opaque document id
    old = {p.id: p for p in data.corpus}
    new_of = dict(zip(data.corpus.ids, view.corpus.ids, strict=True))
    assert view.corpus[new_of["T3"]].title == view.corpus[new_of["T3#2"]].title
    for before, after in zip(data.questions, view.questions, strict=True):
        assert [view.corpus[g].text for g in after.gold_ids] == [
            old[g].text for g in before.gold_ids
        ]
    assert view.corpus.texts()[0] == f"{view.corpus[0].title}\n{data.corpus[0].text}"


def test_views_are_deterministic_and_seeded() -> None:
    data = _dataset()
    for name in ("untitled", "chunked"):
        a = apply_view(data, ViewSettings(name, chunk_words=8, chunk_overlap=2))
        b = apply_view(data, ViewSettings(name, chunk_words=8, chunk_overlap=2))
        c = apply_view(data, ViewSettings(name, seed=7, chunk_words=8, chunk_overlap=2))
        assert list(a.corpus) == list(b.corpus) and a.questions == b.questions
        assert a.corpus.ids != c.corpus.ids


def test_chunks_are_overlapping_windows_of_documents_titled_by_document_name() -> None:
    data = _dataset()
    view = apply_view(data, ViewSettings("chunked", chunk_words=8, chunk_overlap=3, doc_max=3))
    docs: dict[str, list[Passage]] = {}
    for chunk in view.corpus:
        assert chunk.id.startswith(chunk.title + "#") and chunk.title.startswith("doc-")
        docs.setdefault(chunk.title, []).append(chunk)
    for chunks in docs.values():
        for first, second in itertools.pairwise(chunks):
            assert len(first.text.split()) == 8
            assert first.text.split()[-3:] == second.text.split()[:3]
    every_word = {w for p in data.corpus for w in p.text.split()}
    assert every_word == {w for p in view.corpus for w in p.text.split()}
    assert 2 <= len(data.corpus) / len(docs) <= 4


def test_chunked_gold_is_the_chunks_holding_a_supporting_sentence() -> None:
    data = _dataset()
    view = apply_view(data, ViewSettings("chunked", chunk_words=8, chunk_overlap=2))
    source = {p.id: p for p in data.corpus}
    for before, after in zip(data.questions, view.questions, strict=True):
        assert len(after.gold_units) == len(before.gold_ids)
        for pid, unit in zip(before.gold_ids, after.gold_units, strict=True):
            sentences = [" ".join(s.split()) for s in source[pid].text.split(". ")]
            for cid in unit:  # every holder holds at least half of one of its sentences
                chunk = set(view.corpus[cid].text.split())
                assert any(2 * len(chunk & set(s.split())) >= len(s.split()) for s in sentences)
        assert set(after.gold_ids) == {c for unit in after.gold_units for c in unit}
    assert any(len(unit) > 1 for q in view.questions for unit in q.gold_units)


def test_a_gold_passage_split_over_two_chunks_is_found_by_either() -> None:
    corpus = Corpus([Passage("A", "One two three four. Five six seven eight.", "A")])
    question = QAExample("q", "?", (), ("A",), False)
    data = Dataset("one", corpus, (question,), "native")
    view = apply_view(data, ViewSettings("chunked", chunk_words=5, chunk_overlap=1))
    (unit,) = view.questions[0].gold_units
    first, second = unit
    assert view.corpus.ids == [first, second]
    for ranking in ([first], [second]):
        assert recall_at_k(ranking, view.questions[0].gold, 1) == 1.0
        assert all_recall_at_k(ranking, view.questions[0].gold, 1) == 1.0
        assert last_hop_recall_at_k(ranking, view.questions[0].gold, 1) == 1.0
    # counted once: both chunks found is still one gold passage of one
    assert recall_at_k([first, second], view.questions[0].gold, 2) == 1.0


def test_the_harness_scores_gold_units_and_reports_the_view() -> None:
    data = _dataset()
    settings = ViewSettings("chunked", chunk_words=8, chunk_overlap=2)
    view = split_dataset(apply_view(data, settings), "test")
    assert all(q.gold_units for q in view.held_out)
    result = run_benchmark(view, ["dense"], encoder=HashingEncoder(), ks=(1, 3))
    method = result.methods["dense"]
    for i, question in enumerate(view.questions):
        units = question.gold_units
        top = set(method.rankings[i][:3])
        expected = sum(bool(top & set(u)) for u in units) / len(units)
        assert method.per_question_recall[3][i] == pytest.approx(expected)
    summary = to_json(result)["dataset"]
    assert summary["view"] == settings.describe() and summary["view"]["chunk_words"] == 8
    assert summary["gold_passages"] == sum(len(q.gold_units) for q in view.questions)


def test_gold_units_must_name_gold_ids() -> None:
    with pytest.raises(ValueError, match=r"question q: gold_units name ids .*'z'"):
        QAExample("q", "?", (), ("a",), False, gold_units=(("a", "z"),))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "pdf"}, "view"),
        ({"name": "chunked", "chunk_words": 10, "chunk_overlap": 10}, "chunk_overlap"),
        ({"name": "chunked", "doc_min": 3, "doc_max": 2}, "doc_max"),
    ],
)
def test_bad_view_settings_name_the_parameter(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ViewSettings(**kwargs)


def test_sentence_spans_cover_every_word() -> None:
    text = 'He said "Go." Then he left! Why? Because (it rained.) Fine'
    spans = sentence_spans(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text.split())
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert len(spans) == 5


def test_chunked_questions_are_grouped_by_gold_passages_not_chunks() -> None:
    from rag_multihop.eval.report import question_groups

    view = apply_view(_dataset(), ViewSettings("chunked", chunk_words=8, chunk_overlap=2))
    result = run_benchmark(view, ["dense"], encoder=HashingEncoder(), ks=(2,))
    assert any(len(q.gold_ids) > 2 for q in view.questions)
    assert question_groups(result) is None  # every question has two gold passages
