"""The pair source a model records (label-free corpus pairs or labelled ones) picks its
default first-stage margin: 0.02 label-free, 0 labelled or unknown; a given margin wins.
Saved models and index sidecars keep the source; older ones without it load and use 0."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop import Candidate, Query, rank_candidates
from rag_multihop._atomic import ArtifactError, artifact_path
from rag_multihop.association import (
    AssociationReranker,
    PairSet,
    TrainingConfig,
    corpus_pairs,
)
from rag_multihop.association.indexed import AssociationSidecar
from rag_multihop.association.persistence import CONFIG_FILE
from rag_multihop.association.settings import AssociationSettings
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.store import CorpusIndex
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

DEMO = load_demo_dataset()
ENCODER = HashingEncoder(dim=32, name="h")
TRAINING = TrainingConfig(epochs=20, batch_size=16, learning_rate=1e-2, seed=0)


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    return ENCODER.encode([p.embedding_text for p in DEMO.corpus])


def _fit(vectors: np.ndarray, pairs) -> AssociationReranker:
    return AssociationReranker(training=TRAINING).fit(
        DEMO.corpus.ids, vectors, pairs, encoder_name="h"
    )


@pytest.fixture(scope="module")
def label_free(vectors) -> AssociationReranker:
    return _fit(vectors, corpus_pairs(DEMO.corpus))


@pytest.fixture(scope="module")
def gold(vectors) -> AssociationReranker:
    return _fit(vectors, PairSet.from_gold(DEMO.questions))


def _rankings(reranker: AssociationReranker, vectors: np.ndarray) -> list[list[str]]:
    out = []
    for question in DEMO.questions:
        q = ENCODER.encode([question.question])[0]
        incoming = rank_candidates(
            Candidate(p, float(vectors[i] @ q)) for i, p in enumerate(DEMO.corpus)
        )[:30]
        out.append([c.id for c in reranker.rerank(Query(question.question, embedding=q), incoming)])
    return out


def test_a_label_free_model_keeps_the_first_stage_by_002_unless_told_otherwise(
    label_free, vectors
) -> None:
    assert label_free.pair_source == "corpus"
    assert label_free.first_stage_margin == 0.02
    default = _rankings(label_free, vectors)
    assert default == _rankings(label_free.with_settings(first_stage_margin=0.02), vectors)
    plain = label_free.with_settings(AssociationSettings(first_stage_margin=0.0))
    assert plain.first_stage_margin == 0.0
    assert _rankings(plain, vectors) != default  # the margin kept some first-stage ranks


def test_a_gold_pair_model_gets_no_margin_unless_given_one(gold, vectors) -> None:
    assert gold.pair_source == "labelled"
    assert gold.first_stage_margin == 0.0
    assert _rankings(gold, vectors) == _rankings(
        gold.with_settings(first_stage_margin=0.0), vectors
    )
    assert gold.with_settings(first_stage_margin=0.05).first_stage_margin == 0.05
    mixed = PairSet.from_gold(DEMO.questions) | corpus_pairs(DEMO.corpus)
    assert mixed.pair_source == "labelled"  # any labelled pair makes the set labelled
    assert PairSet.from_pairs([("norvale", "castrenne")]).pair_source == "labelled"


def test_save_and_load_keep_the_pair_source_and_an_explicit_margin_wins(
    label_free, tmp_path
) -> None:
    path = label_free.save(tmp_path / "m")
    assert json.loads((artifact_path(path) / CONFIG_FILE).read_text())["pair_source"] == "corpus"
    loaded = AssociationReranker.load(path)
    assert (loaded.pair_source, loaded.first_stage_margin) == ("corpus", 0.02)
    assert AssociationReranker.load(path, first_stage_margin=0.0).first_stage_margin == 0.0
    added = loaded.add_passages(["new"], np.ones((1, 32), dtype=np.float32))
    assert added.pair_source == "corpus"


def test_a_model_saved_without_a_pair_source_loads_and_uses_no_margin(
    label_free, vectors, tmp_path
) -> None:
    path = label_free.save(tmp_path / "old")
    config_file = artifact_path(path) / CONFIG_FILE
    config = json.loads(config_file.read_text())
    del config["pair_source"]  # as saved before the source was recorded
    config_file.write_text(json.dumps(config))
    old = AssociationReranker.load(path)
    assert (old.pair_source, old.first_stage_margin) == (None, 0.0)
    assert _rankings(old, vectors) == _rankings(
        label_free.with_settings(first_stage_margin=0.0), vectors
    )


def test_bad_margins_and_pair_sources_are_refused_clearly(label_free, tmp_path) -> None:
    for bad in (-0.1, float("nan"), "0.02", True):
        with pytest.raises(ValueError, match=r"first_stage_margin must be a finite number >= 0"):
            AssociationSettings(first_stage_margin=bad)
    with pytest.raises(ValueError, match=r">= 0, got -1 \(or None: chosen from the model's pair"):
        label_free.with_settings(first_stage_margin=-1)
    path = label_free.save(tmp_path / "m")
    config_file = artifact_path(path) / CONFIG_FILE
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**config, "pair_source": "clicks"}))
    with pytest.raises(
        ArtifactError, match=r"config.json holds invalid settings: pair_source must be one of"
    ):
        AssociationReranker.load(path)


def test_an_index_sidecar_carries_the_pair_source(label_free, vectors, tmp_path) -> None:
    passages = list(DEMO.corpus)
    index = CorpusIndex.build(tmp_path / "idx", passages, vectors)
    index.attach_sidecar(AssociationSidecar.of(label_free))
    served = AssociationReranker.from_index(CorpusIndex(tmp_path / "idx").snapshot())
    assert (served.pair_source, served.first_stage_margin) == ("corpus", 0.02)
    given = AssociationReranker.from_index(index.snapshot(), first_stage_margin=0.0)
    assert given.first_stage_margin == 0.0

    # a sidecar attached by an older version records no source: 0, unless the model is known
    old = tmp_path / "old"
    CorpusIndex.build(old, passages, vectors).attach_sidecar(
        AssociationSidecar(label_free.weights, label_free.encoder_name)
    )
    assert AssociationReranker.from_index(CorpusIndex(old).snapshot()).first_stage_margin == 0.0
    assert label_free.with_index(CorpusIndex(old).snapshot()).first_stage_margin == 0.02


@pytest.mark.parametrize(
    ("options", "margin"),
    [
        ({"pairs": "corpus", "protocol": "heldout"}, 0.02),
        ({}, 0.0),
        ({"pairs": "corpus", "protocol": "heldout", "aar_first_stage_margin": "0"}, 0.0),
    ],
)
def test_the_bench_reports_the_margin_each_model_reranks_with(options, margin) -> None:
    result = run_benchmark(
        DEMO, ["aar"], encoder=HashingEncoder(), ks=(2,), options={**options, "aar_epochs": "2"}
    )
    assert {m["first_stage_margin"] for m in result.methods["aar"].extras["models"]} == {margin}
