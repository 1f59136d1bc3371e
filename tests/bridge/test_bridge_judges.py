"""LLM-free bridge judges: known answers, an independent reference, and bad judge output."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest

from rag_multihop.association.model import AssociationWeights, association_transform
from rag_multihop.association.persistence import SavedModel, save_model
from rag_multihop.association.reranker import AssociationReranker
from rag_multihop.bridge.features import mentions, title_key
from rag_multihop.bridge.judges import (
    AssociationJudge,
    EmbeddingJudge,
    Judgement,
    JudgeWeights,
    check_judgement,
)
from rag_multihop.types import Passage, Query
from rag_multihop.vectors import PassageVectors

IDS = ["b", "c1", "c2", "c3"]
VECTORS = np.array(
    [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=np.float32
)
BRIDGE = Passage("b", "Polish Wedding is a film by Theresa Connelly.", title="Polish Wedding")
CANDIDATES = [
    Passage("c1", "A director.", title="Theresa Connelly (director)"),
    Passage("c2", "A city.", title="Philadelphia"),
    Passage("c3", "An actress.", title="Claire Danes"),
]
QUESTION = Query("Was Claire Danes older than the director?", embedding=np.array([0.0, 1.0, 0.0]))


def test_features_match_titles_as_whole_normalised_words() -> None:
    assert title_key("Mercury (planet)") == "mercury"
    assert mentions(["Connelly", "Conn", "Ox", ""], "Theresa Connelly's film").tolist() == [
        1.0,
        0.0,  # not a whole word
        0.0,  # too short to count
        0.0,
    ]


def test_embedding_judge_known_answer() -> None:
    judge = EmbeddingJudge(PassageVectors(ids=IDS, vectors=VECTORS))
    scores = judge.score(QUESTION, BRIDGE, [], CANDIDATES)
    # mean of (cos(c, q) + 1) / 2, title in bridge, title in question
    expected = [(0.9 + 1.0 + 0.0) / 3, (0.5 + 0.0 + 0.0) / 3, (1.0 + 0.0 + 1.0) / 3]
    assert scores.tolist() == pytest.approx(expected)
    assert judge.score(QUESTION, BRIDGE, [], []).shape == (0,)


def test_embedding_judge_scores_off_the_event_loop_with_the_same_scores() -> None:
    judge = EmbeddingJudge(PassageVectors(ids=IDS, vectors=VECTORS))
    threads = []
    score = judge.score

    def recording(*args: object) -> np.ndarray:
        threads.append(threading.get_ident())
        return score(*args)  # type: ignore[arg-type]

    judge.score = recording  # type: ignore[method-assign]
    scores = asyncio.run(judge.ascore(QUESTION, BRIDGE, [], CANDIDATES))
    assert threads and threads[0] != threading.get_ident()  # a worker thread, not the loop's
    assert scores.tolist() == score(QUESTION, BRIDGE, [], CANDIDATES).tolist()


def test_embedding_judge_weights_select_signals() -> None:
    vectors = PassageVectors(ids=IDS, vectors=VECTORS)
    only_bridge = EmbeddingJudge(vectors, weights=JudgeWeights(0, 1, 0, 0))
    scores = only_bridge.score(QUESTION, BRIDGE, [], CANDIDATES)
    assert scores.tolist() == pytest.approx([0.8, 0.5, 0.5])  # (cos(c, b) + 1) / 2


def test_judge_weights_are_validated() -> None:
    with pytest.raises(ValueError, match="question must be a finite number >= 0, got -1"):
        JudgeWeights(question=-1)
    with pytest.raises(ValueError, match="must not all be 0"):
        JudgeWeights(0, 0, 0, 0)


def test_unknown_passages_are_encoded_and_missing_encoder_is_an_error(hashing_encoder) -> None:
    judge = EmbeddingJudge(PassageVectors(hashing_encoder))
    scores = judge.score(Query("Who is Theresa Connelly?"), BRIDGE, [], CANDIDATES)
    assert scores.shape == (3,) and ((scores >= 0) & (scores <= 1)).all()
    bare = EmbeddingJudge(PassageVectors(ids=["b"], vectors=VECTORS[:1]))
    with pytest.raises(
        ValueError,
        match="3 passage\\(s\\) are not stored in this store and have no vector given",
    ):
        bare.score(QUESTION, BRIDGE, [], CANDIDATES)


def _identity_reranker(tmp_path: Path) -> AssociationReranker:
    weights = AssociationWeights.identity(3)
    saved = SavedModel(
        weights,
        {"encoder": {"name": "toy", "dim": 3}, "scoring": {"lambda": 0.5, "mode": "mixed"}},
        tuple(IDS),
        VECTORS,
        association_transform(VECTORS, weights),
    )
    return AssociationReranker.load(save_model(saved, tmp_path / "aar"))


def test_association_judge_with_identity_model_equals_embedding_judge(tmp_path: Path) -> None:
    # identity f: association = cosine, so both judges compute the same mean of signals
    weights = JudgeWeights(1.0, 1.0, 1.0, 1.0)
    association = AssociationJudge(_identity_reranker(tmp_path), weights=weights)
    embedding = EmbeddingJudge(PassageVectors(ids=IDS, vectors=VECTORS), weights=weights)
    assert association.score(QUESTION, BRIDGE, [], CANDIDATES).tolist() == pytest.approx(
        embedding.score(QUESTION, BRIDGE, [], CANDIDATES).tolist(), abs=1e-6
    )


def test_association_judge_uses_given_vectors_for_unstored_passages(tmp_path: Path) -> None:
    extra = Passage("new", "A new page.", title="New")
    vectors = PassageVectors(ids=["new"], vectors=np.array([[0.0, 1.0, 0.0]]))
    judge = AssociationJudge(_identity_reranker(tmp_path), vectors=vectors)
    scores = judge.score(QUESTION, BRIDGE, [], [extra, CANDIDATES[0]])
    assert scores.shape == (2,)
    with pytest.raises(ValueError, match="needs a fitted AssociationReranker"):
        AssociationJudge(AssociationReranker())


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([0.2], "returned 1 score\\(s\\) of shape \\(1,\\) for 2 candidate"),
        ([0.2, 1.5], "outside \\[0, 1\\] at positions \\[1\\]: \\[1.5\\]"),
        ([-0.1, 0.5], "outside \\[0, 1\\] at positions \\[0\\]"),
        ([float("nan"), 0.5], "outside \\[0, 1\\] at positions \\[0\\]"),
    ],
)
def test_check_judgement_rejects_bad_scores(scores: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_judgement(scores, 2, "toy")


def test_check_judgement_accepts_sequences_and_judgements() -> None:
    assert check_judgement([0.0, 1.0], 2, "toy").scores.tolist() == [0.0, 1.0]
    judged = check_judgement(Judgement(np.array([0.5]), fallbacks=1), 1, "toy")
    assert judged.fallbacks == 1


def test_encoded_passages_are_remembered_up_to_memo_size(hashing_encoder) -> None:
    vectors = PassageVectors(hashing_encoder, memo_size=2)
    first = vectors.passages(CANDIDATES[:2])
    calls = hashing_encoder.calls
    np.testing.assert_array_equal(vectors.passages(CANDIDATES[:2]), first)
    assert hashing_encoder.calls == calls  # both remembered
    vectors.passages(CANDIDATES[2:])  # evicts the oldest
    vectors.passages(CANDIDATES[:1])
    assert hashing_encoder.calls == calls + 2
    with pytest.raises(ValueError, match="memo_size must be an integer >= 0, got -1"):
        PassageVectors(hashing_encoder, memo_size=-1)
