"""Saved association models: identical scores after reload, clear errors for bad directories."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query
from rag_multihop._atomic import VERSION_MARKER, artifact_path
from rag_multihop.association import AssociationReranker, TrainingConfig
from rag_multihop.association.persistence import (
    CONFIG_FILE,
    IDS_FILE,
    TRANSFORMED_FILE,
    VECTORS_FILE,
    WEIGHTS_FILE,
    read_config,
)
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

TEXTS = [f"passage number {i} about topic {i % 4}" for i in range(12)]
IDS = [f"p{i}" for i in range(12)]


@pytest.fixture(scope="module")
def encoder() -> HashingEncoder:
    return HashingEncoder(dim=16, name="hashing-test")


@pytest.fixture(scope="module")
def trained(encoder) -> AssociationReranker:
    config = TrainingConfig(epochs=3, batch_size=8, seed=2)
    reranker = AssociationReranker(lambda_=0.4, mode="reverse", training=config)
    pairs = [("p0", "p5"), ("p1", "p6"), ("p2", "p7")]
    return reranker.fit(IDS, encoder.encode(TEXTS), pairs, encoder_name=encoder.name)


@pytest.fixture
def saved(trained, tmp_path):
    return trained.save(tmp_path / "model")


def rerank_all(reranker: AssociationReranker, encoder: HashingEncoder) -> list[Candidate]:
    found = [Candidate(Passage(pid, text), 0.0) for pid, text in zip(IDS, TEXTS, strict=True)]
    return reranker.rerank(Query("q", embedding=encoder.encode(["topic 1 passage"])[0]), found)


def test_reload_gives_identical_scores_and_settings(trained, saved, encoder):
    loaded = AssociationReranker.load(saved)
    assert rerank_all(loaded, encoder) == rerank_all(trained, encoder)
    assert (loaded.lambda_, loaded.mode, loaded.training) == (0.4, "reverse", trained.training)
    assert loaded.provenance == json.loads(json.dumps(trained.provenance))
    overridden = AssociationReranker.load(saved, lambda_=0.9, mode="mixed", encoder=encoder)
    assert (overridden.lambda_, overridden.mode, overridden.encoder) == (0.9, "mixed", encoder)


def test_directory_is_inspectable(saved):
    assert (saved / "CURRENT").is_file()  # names the version
    saved = artifact_path(saved)
    assert sorted(p.name for p in saved.iterdir() if p.name != VERSION_MARKER) == sorted(
        [CONFIG_FILE, WEIGHTS_FILE, VECTORS_FILE, TRANSFORMED_FILE, IDS_FILE]
    )
    config = read_config(saved)
    assert config["kind"] == "rag_multihop.association" and config["format_version"] == 1
    assert config["encoder"] == {"name": "hashing-test", "dim": 16}
    assert config["scoring"] == {"lambda": 0.4, "mode": "reverse"}
    assert config["training"]["epochs"] == 3 and config["training_stats"]["directed_pairs"] == 6
    assert config["pair_stats"]["pairs"] == 3 and config["passages"] == 12
    assert "rag_multihop_version" in config
    assert json.loads((saved / IDS_FILE).read_text()) == IDS
    assert np.load(saved / TRANSFORMED_FILE, allow_pickle=False).shape == (12, 16)


def test_saving_again_replaces_the_model_atomically(trained, saved):
    again = trained.with_settings(lambda_=0.1).save(saved)
    assert again == saved and read_config(saved)["scoring"]["lambda"] == 0.1
    assert [p.name for p in saved.parent.iterdir()] == ["model"]  # no temporary leftovers


def test_refuses_to_overwrite_a_foreign_directory(trained, tmp_path):
    (tmp_path / "notes.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="is not a saved association model; refusing"):
        trained.save(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_loading_with_another_encoder_names_both(saved):
    # fitted from vectors without an encoder: no fingerprint, so the names are compared
    with pytest.raises(ValueError, match=r"'hashing-test' but the given encoder is 'other'\. "):
        AssociationReranker.load(saved, encoder=HashingEncoder(dim=16, name="other"))
    with pytest.raises(ValueError, match=r"'hashing-test' \(dim 16\) .* 'hashing-test' has dim 32"):
        AssociationReranker.load(saved, encoder=HashingEncoder(dim=32, name="hashing-test"))


def edit_config(path, **changes):
    config = json.loads((path / CONFIG_FILE).read_text())
    config.update(changes)
    (path / CONFIG_FILE).write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("damage", "error", "message"),
    [
        (lambda p: (p / CONFIG_FILE).unlink(), FileNotFoundError, "not a saved association model"),
        (lambda p: (p / CONFIG_FILE).write_text("{oops"), ValueError, "corrupted"),
        (lambda p: edit_config(p, kind="other.model"), ValueError, "holds a 'other.model' art"),
        (lambda p: edit_config(p, format_version=9), ValueError, "format_version 9"),
        (lambda p: edit_config(p, encoder={"name": "x"}), ValueError, "positive dim"),
        (lambda p: (p / VECTORS_FILE).unlink(), ValueError, r"missing \['passage_vectors.npy'\]"),
        (lambda p: (p / WEIGHTS_FILE).write_bytes(b"junk" * 10), ValueError, "corrupted"),
        (lambda p: edit_config(p, encoder={"name": "hashing-test", "dim": 8}), ValueError,
         "weights have dimension 16 but config.json says 8"),
        (lambda p: (p / IDS_FILE).write_text('["a", "a"]'), ValueError, "duplicate passage ids"),
        (lambda p: (p / IDS_FILE).write_text("{"), ValueError, "corrupted"),
        (lambda p: (p / IDS_FILE).write_text('["p0"]'), ValueError, r"expected float32 \(1, 16\)"),
        (lambda p: np.save(p / TRANSFORMED_FILE, np.full((12, 16), np.nan, "float32")),
         ValueError, "contains NaN"),
        (lambda p: (p / TRANSFORMED_FILE).write_bytes(b"not npy"), ValueError, "corrupted"),
        (lambda p: np.save(p / VECTORS_FILE, np.array([{"a": 1}], dtype=object)), ValueError,
         "corrupted"),
    ],
)  # fmt: skip
def test_corrupted_or_foreign_directories(saved, damage, error, message):
    damage(artifact_path(saved))
    with pytest.raises(error, match=message):
        AssociationReranker.load(saved)


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        AssociationReranker.load(tmp_path / "absent")
