"""Attaching an AAR model to an index whose vectors of the model's own passages are another
encoder's (same dimension) is refused before anything is written; the same vectors, even
rounded to float16, attach; a model of another corpus (no shared passages) attaches with a
log line; a producer rebuilt from the stored head has nothing to check."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.association import AssociationReranker, TrainingConfig
from rag_multihop.association.indexed import PROBE_SIZE, AssociationSidecar
from rag_multihop.association.model import association_transform
from rag_multihop.store import CorpusIndex
from rag_multihop.validation import l2_normalize

pytest.importorskip("torch")

DIM = 16
N = 300  # more than PROBE_SIZE: the probe is a spread-out subset


def _passages(prefix: str, n: int) -> list[Passage]:
    return [Passage(f"{prefix}{i}", f"text {prefix}{i}", f"T {prefix}{i}") for i in range(n)]


def _vectors(n: int, seed: int) -> np.ndarray:
    return l2_normalize(np.random.default_rng(seed).normal(size=(n, DIM)))


def _fit(passages: list[Passage], vectors: np.ndarray) -> AssociationReranker:
    ids = [p.id for p in passages]
    pairs = [(ids[i], ids[i + 1]) for i in range(0, len(ids) - 1, 2)]
    training = TrainingConfig(epochs=2, batch_size=64, seed=0)
    return AssociationReranker(training=training).fit(ids, vectors, pairs, encoder_name="toy")


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Passage], np.ndarray]:
    return _passages("p", N), _vectors(N, seed=0)


@pytest.fixture(scope="module")
def model(corpus) -> AssociationReranker:
    return _fit(*corpus)


def _rotated(vectors: np.ndarray) -> np.ndarray:
    """The vectors in another basis: what another encoder of the same dimension gives."""
    rotation, _ = np.linalg.qr(np.random.default_rng(7).normal(size=(DIM, DIM)))
    return (vectors @ rotation).astype(np.float32)


def test_the_index_of_the_models_own_vectors_attaches(tmp_path, corpus, model) -> None:
    passages, vectors = corpus
    producer = AssociationSidecar.of(model)
    assert producer.probe is not None and len(producer.probe) == PROBE_SIZE
    assert {passages[0].id, passages[-1].id} <= set(producer.probe)  # evenly spaced
    index = CorpusIndex.build(tmp_path / "idx", passages, vectors)
    index.attach_sidecar(producer)
    assert "aar" in index.snapshot().manifest["sidecars"]

    # float16 storage of the same vectors: still the model's encoder
    rounded = vectors.astype(np.float16).astype(np.float32)
    CorpusIndex.build(tmp_path / "f16", passages, rounded).attach_sidecar(producer)
    # an index holding only some of the model's passages is checked on those
    CorpusIndex.build(tmp_path / "part", passages[:30], vectors[:30]).attach_sidecar(producer)
    bad = CorpusIndex.build(tmp_path / "bad-part", passages[:30], _rotated(vectors[:30]))
    with pytest.raises(ValueError, match="of 2[0-9] passages both hold"):
        bad.attach_sidecar(producer)


def test_another_encoders_vectors_are_refused_and_nothing_is_written(
    tmp_path, corpus, model
) -> None:
    passages, vectors = corpus
    index = CorpusIndex.build(tmp_path / "idx", passages, _rotated(vectors))
    before = index.snapshot().manifest
    with pytest.raises(ValueError) as refused:
        index.attach_sidecar(AssociationSidecar.of(model))
    message = str(refused.value)
    assert "encoder 'toy'" in message
    assert f"of {PROBE_SIZE} passages both hold" in message
    assert "median cosine" in message and "AssociationReranker.fit" in message
    after = CorpusIndex(tmp_path / "idx").snapshot().manifest
    assert after["version"] == before["version"]
    assert not after.get("sidecars")
    assert not any((tmp_path / "idx" / "sidecars").glob("*-aar-*"))

    # the way out for a model of another corpus whose ids merely coincide: no probe
    index.attach_sidecar(AssociationSidecar.of(model, check=False))
    assert "aar" in CorpusIndex(tmp_path / "idx").snapshot().manifest["sidecars"]


def test_too_few_or_no_shared_passages_attach_with_a_log_line(
    tmp_path, corpus, model, caplog
) -> None:
    passages, vectors = corpus
    other = _passages("q", 40)
    caplog.set_level(logging.INFO, logger="rag_multihop.association.indexed")
    # a model of another corpus: its f(p) generalises, nothing to compare
    foreign = _fit(other, _vectors(40, seed=1))
    CorpusIndex.build(tmp_path / "idx", passages, vectors).attach_sidecar(
        AssociationSidecar.of(foreign)
    )
    assert "shares 0 of its 40 probe passages with the index" in caplog.text
    # two shared passages (rotated) are too few to judge by
    caplog.clear()
    mixed = other[:20] + passages[:2]
    mixed_vectors = np.concatenate([_vectors(20, seed=2), _rotated(vectors[:2])])
    CorpusIndex.build(tmp_path / "mixed", mixed, mixed_vectors).attach_sidecar(
        AssociationSidecar.of(model)
    )
    assert f"shares 2 of its {PROBE_SIZE} probe passages" in caplog.text


def test_the_probe_is_no_part_of_the_identity_and_the_head_has_none(
    tmp_path, corpus, model
) -> None:
    passages, vectors = corpus
    index = CorpusIndex.build(tmp_path / "idx", passages[:200], vectors[:200])
    version = index.attach_sidecar(AssociationSidecar.of(model))
    identity = AssociationSidecar.of(model).identity()
    assert identity == AssociationSidecar.of(model, check=False).identity()
    assert index.snapshot().manifest["sidecars"]["aar"]["identity"] == identity
    assert index.attach_sidecar(AssociationSidecar.of(model)) == version  # nothing new

    # later writes through a reopened index compute f(p) from the head (no probe, no check)
    reopened = CorpusIndex(tmp_path / "idx")
    reopened.add(passages[200:], _rotated(vectors[200:]))
    snapshot = reopened.snapshot()
    assert AssociationSidecar.from_sidecar(snapshot.sidecar("aar")).probe is None
    served = AssociationReranker.from_index(snapshot)
    ids = [p.id for p in passages[200:]]
    _, stored, transformed = served._stored(ids)
    assert served.computed_at_query_time == 0
    np.testing.assert_allclose(
        transformed, association_transform(stored, model.weights), rtol=1e-5, atol=1e-6
    )
