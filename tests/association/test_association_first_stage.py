"""AAR's first-stage margin: association takes a rank from the incoming order only with a
clear lead in the blended score; below it the incoming order stays (signal ``first_stage``)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query, rank_candidates
from rag_multihop.association import AssociationReranker, PairSet, TrainingConfig
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.views import ViewSettings, apply_view
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

TEXTS = [f"note {i} about the mill, the river and the {w}" for i, w in enumerate("abcdefghij")]
IDS = [f"p{i}" for i in range(len(TEXTS))]
PAIRS = [("p0", "p5"), ("p1", "p6"), ("p2", "p7"), ("p3", "p8"), ("p4", "p9")]


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    return HashingEncoder(dim=32, name="h").encode(TEXTS)


@pytest.fixture(scope="module")
def fitted(vectors) -> AssociationReranker:
    config = TrainingConfig(epochs=30, batch_size=8, learning_rate=1e-2, seed=0)
    return AssociationReranker(training=config).fit(
        IDS, vectors, PairSet.from_pairs(PAIRS, source="gold"), encoder_name="h"
    )


def _incoming(vectors: np.ndarray, q: np.ndarray) -> list[Candidate]:
    return rank_candidates(
        Candidate(Passage(pid, TEXTS[i]), float(vectors[i] @ q)) for i, pid in enumerate(IDS)
    )


def _reranked(fitted, vectors, q, margin: float) -> list[Candidate]:
    reranker = fitted.with_settings(AssociationSettings(first_stage_margin=margin))
    return reranker.rerank(Query("q", embedding=q), _incoming(vectors, q))


def test_a_large_margin_keeps_the_incoming_order(fitted, vectors) -> None:
    moved = 0
    for i in range(len(IDS)):
        q = vectors[i]
        incoming = [c.id for c in _incoming(vectors, q)]
        plain = _reranked(fitted, vectors, q, 0.0)
        moved += [c.id for c in plain] != incoming
        kept = _reranked(fitted, vectors, q, 10.0)
        assert [c.id for c in kept] == incoming
        assert "first_stage" not in plain[0].signals
        scores = [c.score for c in kept]
        assert scores == sorted(scores, reverse=True)
    assert moved  # association alone would have reordered


def test_a_rank_is_taken_only_by_a_lead_of_the_margin(fitted, vectors) -> None:
    margin = 0.05
    for i in range(len(IDS)):
        q = vectors[i]
        ranked = _reranked(fitted, vectors, q, margin)
        plain = {c.id: c.score for c in _reranked(fitted, vectors, q, 0.0)}
        incoming = [c.id for c in _incoming(vectors, q)]
        used: set[str] = set()
        for c in ranked:
            first = next(pid for pid in incoming if pid not in used)
            if c.id != first:  # taken from the first stage: it leads by the margin
                assert plain[c.id] >= plain[first] + margin - 1e-9
            elif max(v for pid, v in plain.items() if pid not in used) > plain[first]:
                assert c.signals["first_stage"] == 1.0
            used.add(c.id)


def test_the_margin_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="first_stage_margin"):
        AssociationSettings(first_stage_margin=-0.1)


def test_label_free_aar_with_a_large_margin_is_never_below_dense() -> None:
    data = apply_view(load_demo_dataset(), ViewSettings("untitled"))
    options = {"pairs": "corpus", "protocol": "heldout", "aar_epochs": "5"}
    result = run_benchmark(
        data,
        ["dense", "aar"],
        encoder=HashingEncoder(),
        ks=(2, 5),
        options={**options, "aar_first_stage_margin": "1.0"},
    )
    for k in (2, 5):
        ours = result.methods["aar"].per_question_recall[k]
        dense = result.methods["dense"].per_question_recall[k]
        assert np.array_equal(ours, dense)
