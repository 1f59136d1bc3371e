"""What makes the LLM-free bridge fast without changing its rankings: the question's vector
reused, encoded texts remembered, query-independent expansion texts precomputed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.bridge.queries import TemplateQueryWriter
from rag_multihop.bridge.search import DenseSearcher
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from tests.conftest import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

PASSAGES = [
    *polish_wedding_passages(),
    Passage("rope2", "Rope is a 1948 film. It stars James Stewart.", title="Rope"),
]


class RecordingEncoder(HashingEncoder):
    """The hashing encoder, remembering every text it was asked to encode."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.texts += list(texts)
        return super().encode(texts)


def _question(encoder: HashingEncoder) -> Query:
    return Query(
        POLISH_WEDDING_QUESTION, id="q", embedding=encoder.encode([POLISH_WEDDING_QUESTION])[0]
    )


def _bridge(encoder: HashingEncoder, **searcher_options: int) -> BridgeRetriever:
    dense = DenseRetriever.from_corpus(Corpus(PASSAGES), encoder)
    searcher = DenseSearcher.from_retriever(dense)
    searcher.memo_size = searcher_options.get("memo_size", searcher.memo_size)
    return BridgeRetriever.llm_free(searcher, encoder=encoder)


def test_the_question_is_never_encoded_again_and_repeated_texts_once():
    encoder = RecordingEncoder()
    question = _question(encoder)
    bridge = _bridge(encoder)
    encoder.texts.clear()
    first = bridge.run(question, k=4)
    encoded = list(encoder.texts)
    second = bridge.run(question, k=4)
    assert POLISH_WEDDING_QUESTION not in encoded
    assert encoded and len(encoded) == len(set(encoded))
    assert encoder.texts == encoded  # the second run encoded nothing
    assert [c.id for c in first.candidates] == [c.id for c in second.candidates]


def test_prepare_leaves_only_question_texts_to_encode_and_keeps_the_ranking():
    plain_encoder, prepared_encoder = RecordingEncoder(), RecordingEncoder()
    plain = _bridge(plain_encoder, memo_size=0)
    prepared = _bridge(prepared_encoder, memo_size=0)
    assert prepared.prepare(PASSAGES) == len(prepared.preparation_texts(PASSAGES)) > 0
    assert prepared.prepare(PASSAGES) == 0  # already known
    prepared_encoder.texts.clear()
    expected = plain.run(_question(plain_encoder), k=4)
    got = prepared.run(_question(prepared_encoder), k=4)
    assert [c.id for c in got.candidates] == [c.id for c in expected.candidates]
    assert [c.score for c in got.candidates] == pytest.approx(
        [c.score for c in expected.candidates]
    )
    bridge_passage = next(p for p in PASSAGES if p.id == got.trace.bridge_id)
    independent = set(TemplateQueryWriter().passage_texts(bridge_passage))
    assert set(got.trace.entities) <= independent
    assert not independent & set(prepared_encoder.texts)


def test_prepare_takes_given_vectors_and_checks_them():
    encoder = RecordingEncoder()
    bridge = _bridge(encoder)
    texts = bridge.preparation_texts(PASSAGES)
    encoder.texts.clear()
    assert bridge.prepare(PASSAGES, encoder.encode(texts)) == len(texts)
    assert encoder.texts == texts  # only the call above: prepare encoded nothing itself
    with pytest.raises(ValueError, match=r"got 1 texts but 2 vectors"):
        bridge.searcher.remember(["x"], np.ones((2, encoder.dim), dtype=np.float32))
    with pytest.raises(ValueError, match="text vectors have dimension 3, expected 64"):
        bridge.searcher.remember(["x"], np.ones((1, 3), dtype=np.float32))


def test_recent_texts_are_capped_and_memo_size_is_checked():
    corpus = Corpus([Passage("a", "x"), Passage("b", "y")])
    index = DenseIndex.build(corpus.ids, np.eye(2, dtype=np.float32))

    class TwoD:
        name, dim = "two", 2

        def __init__(self) -> None:
            self.calls = 0

        def encode(self, texts, *, show_progress=False):
            self.calls += 1
            return np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    encoder = TwoD()
    searcher = DenseSearcher(corpus, index, encoder, memo_size=1)
    searcher.search([Query("p"), Query("p"), Query("q")], k=1)  # one call, duplicates once
    searcher.search([Query("q")], k=1)
    searcher.search([Query("p")], k=1)  # forgotten: the memo holds one text
    assert encoder.calls == 2
    with pytest.raises(ValueError, match="memo_size must be an integer >= 0, got -1"):
        DenseSearcher(corpus, index, encoder, memo_size=-1)


def test_passage_texts_are_the_selectable_entities_and_sentences():
    writer = TemplateQueryWriter()
    rope = PASSAGES[-1]
    assert writer.passage_texts(rope) == [
        "james stewart",
        "Rope is a 1948 film.",
        "It stars James Stewart.",
    ]
    assert TemplateQueryWriter(n_entities=0, templates=("question",)).passage_texts(rope) == []
