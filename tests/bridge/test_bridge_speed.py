"""What makes the LLM-free bridge fast without changing its rankings: the question's vector
reused, encoded texts remembered, query-independent expansion texts precomputed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.bridge.queries import TemplateQueryWriter
from rag_multihop.encoders import MemoEncoder
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder, polish_wedding_passages

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


def _bridge(encoder: HashingEncoder, *, memo: bool = True) -> BridgeRetriever:
    dense = DenseRetriever.from_corpus(Corpus(PASSAGES), encoder)
    searcher = dense.with_encoder(MemoEncoder(encoder) if memo else encoder)
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
    plain = _bridge(plain_encoder, memo=False)
    prepared = _bridge(prepared_encoder)
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
    memo = bridge.searcher.encoder
    with pytest.raises(ValueError, match=r"got 1 texts but 2 vectors"):
        memo.remember(["x"], np.ones((2, encoder.dim), dtype=np.float32))
    with pytest.raises(ValueError, match="text vectors have dimension 3, expected 64"):
        memo.remember(["x"], np.ones((1, 3), dtype=np.float32))
    with pytest.raises(
        ValueError, match="prepare\\(\\) keeps vectors in the searcher's MemoEncoder"
    ):
        _bridge(encoder, memo=False).prepare(PASSAGES)


def test_passage_texts_are_the_selectable_entities_and_sentences():
    writer = TemplateQueryWriter()
    rope = PASSAGES[-1]
    assert writer.passage_texts(rope) == [
        "james stewart",
        "Rope is a 1948 film.",
        "It stars James Stewart.",
    ]
    assert TemplateQueryWriter(n_entities=0, templates=("question",)).passage_texts(rope) == []
