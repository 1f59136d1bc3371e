"""Training f with torch: reproducibility, the one-sided objective, small inputs, bad input."""

from __future__ import annotations

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rag_multihop.association.model import association_transform  # noqa: E402
from rag_multihop.association.training import TrainingConfig, train_association  # noqa: E402

DIM = 16


def clustered_vectors(n: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


PAIRS = np.array([[i, i + 12] for i in range(12)])  # passage i is associated with i + 12


def test_same_seed_same_weights_other_seed_differs():
    vectors = clustered_vectors()
    config = TrainingConfig(epochs=3, batch_size=8, seed=7)
    first, stats = train_association(vectors, PAIRS, config)
    second, _ = train_association(vectors, PAIRS, config)
    for a, b in zip(first.to_state_dict().values(), second.to_state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b)
    other, _ = train_association(vectors, PAIRS, TrainingConfig(epochs=3, batch_size=8, seed=8))
    assert not np.array_equal(first.linear_weights[0], other.linear_weights[0])
    assert stats.directed_pairs == 24 and stats.steps == 3 * 3 and stats.pairs == 12


def test_training_leaves_the_global_torch_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_association(clustered_vectors(), PAIRS, TrainingConfig(epochs=1, batch_size=8))
    torch.testing.assert_close(torch.rand(3), expected)


def test_training_learns_the_pairs_one_sided():
    vectors = clustered_vectors()
    config = TrainingConfig(epochs=60, batch_size=24, learning_rate=1e-2, seed=0)
    weights, stats = train_association(vectors, PAIRS, config)
    transformed = association_transform(vectors, weights)
    # f(anchor) · positive (raw) should single out the partner among all raw vectors.
    scores = transformed @ vectors.T
    np.fill_diagonal(scores, -np.inf)
    partners = {**{i: i + 12 for i in range(12)}, **{i + 12: i for i in range(12)}}
    hits = sum(int(np.argmax(scores[i]) == j) for i, j in partners.items())
    assert hits == 24, hits
    assert stats.final_accuracy > 0.9 and 0 < stats.alpha < 1


def test_threads_apply_during_training_only():
    before = torch.get_num_threads()
    _, stats = train_association(clustered_vectors(), PAIRS, TrainingConfig(epochs=1, threads=1))
    assert stats.threads == 1 and torch.get_num_threads() == before


def test_fewer_pairs_than_batch_size_warns_and_uses_one_batch(caplog):
    with caplog.at_level(logging.WARNING, logger="rag_multihop.association.training"):
        _, stats = train_association(clustered_vectors(), PAIRS[:3], TrainingConfig(epochs=2))
    assert stats.batch_size == 6 and stats.steps == 2
    assert "only 6 directed pairs, fewer than batch_size=512" in caplog.text


def test_duplicate_and_reversed_pairs_are_trained_once():
    pairs = np.array([[0, 12], [12, 0], [0, 12], [1, 13]])
    _, stats = train_association(clustered_vectors(), pairs, TrainingConfig(epochs=1))
    assert stats.directed_pairs == 4


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (np.zeros((0, 2), dtype=int), "no association pairs"),
        (np.array([[0, 1, 2]]), r"pairs must be an \(m, 2\) integer array"),
        (np.array([[0.0, 1.0]]), r"pairs must be an \(m, 2\) integer array"),
        (np.array([[0, 99]]), r"pair rows must be in \[0, 23\], got 0..99"),
        (np.array([[3, 3]]), "every pair joins a passage to itself"),
    ],
)
def test_bad_pairs_are_rejected(pairs, message):
    with pytest.raises(ValueError, match=message):
        train_association(clustered_vectors(), pairs, TrainingConfig(epochs=1))


def test_nan_vectors_are_rejected():
    vectors = clustered_vectors()
    vectors[5, 0] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf values \(rows \[5\]"):
        train_association(vectors, PAIRS, TrainingConfig(epochs=1))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs must be a positive integer, got 0"),
        ({"batch_size": 1.5}, "batch_size must be a positive integer, got 1.5"),
        ({"learning_rate": -1}, "learning_rate must be a finite number > 0, got -1"),
        ({"temperature": 0}, "temperature must be a finite number > 0, got 0"),
        ({"grad_clip": float("inf")}, "grad_clip must be a finite number > 0, got inf"),
        ({"weight_decay": 1.0}, r"weight_decay must be in \[0, 1\), got 1.0"),
        ({"residual_init": float("nan")}, "residual_init must be a finite number, got nan"),
        ({"seed": -1}, "seed must be an integer >= 0, got -1"),
        ({"threads": 0}, "threads must be a positive integer, got 0"),
    ],
)
def test_training_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainingConfig(**kwargs)


def test_training_config_dict_round_trip_and_unknown_keys():
    config = TrainingConfig(epochs=7, seed=3)
    assert TrainingConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match=r"unknown training settings \['lr'\]"):
        TrainingConfig.from_dict({"lr": 0.1})
