"""Model identity by vectors: a saved association model records its encoder's fingerprint and
accepts any encoder that reproduces it, whatever its name, and refuses any other, whatever
its name; models without a fingerprint fall back to the name, say so, and upgrade on save."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import numpy as np
import pytest

from rag_multihop._atomic import artifact_path
from rag_multihop.association import AssociationReranker, TrainingConfig
from rag_multihop.association.persistence import CONFIG_FILE, FINGERPRINT_FILE, read_config
from rag_multihop.encoders import PROBE_TEXTS, EncoderFingerprint, SentenceTransformerEncoder
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

TEXTS = [f"passage number {i} about topic {i % 4}" for i in range(12)]
IDS = [f"p{i}" for i in range(12)]
PAIRS = [("p0", "p5"), ("p1", "p6")]
CONFIG = TrainingConfig(epochs=2, batch_size=8, seed=0)


class Renamed:
    """Another encoder's vectors under another name (or with noise of size ``noise``)."""

    def __init__(self, inner, name: str, noise: float = 0.0) -> None:
        self.inner, self.name, self.noise = inner, name, noise

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        vectors = self.inner.encode(texts)
        rng = np.random.default_rng(0)
        return (vectors + self.noise * rng.standard_normal(vectors.shape)).astype("float32")


class Shifted(HashingEncoder):
    """A different model of the same dimension (and, here, the same name): words hash to
    other buckets."""

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        return np.roll(super().encode(texts), 3, axis=1)


def fit(encoder=None, encoder_name=None) -> AssociationReranker:
    vectors = HashingEncoder(dim=16).encode(TEXTS)
    reranker = AssociationReranker(encoder=encoder, training=CONFIG)
    return reranker.fit(IDS, vectors, PAIRS, encoder_name=encoder_name)


@pytest.fixture(scope="module")
def with_fingerprint(tmp_path_factory):
    reranker = fit(HashingEncoder(dim=16))
    return reranker.save(tmp_path_factory.mktemp("aar") / "model")


@pytest.fixture
def without_fingerprint(tmp_path):
    """A model as saved before fingerprints (fitted from vectors, no encoder)."""
    return fit(encoder_name="hashing-test").save(tmp_path / "old")


def test_a_model_fitted_with_an_encoder_saves_its_fingerprint(with_fingerprint):
    folder = artifact_path(with_fingerprint)
    config = read_config(folder)
    assert config["format_version"] == 1
    assert config["encoder"] == {"name": "hashing-test", "dim": 16, "probe_texts": [*PROBE_TEXTS]}
    saved = np.load(folder / FINGERPRINT_FILE, allow_pickle=False)
    np.testing.assert_allclose(saved, HashingEncoder(dim=16).encode(PROBE_TEXTS), atol=1e-6)
    loaded = AssociationReranker.load(with_fingerprint)
    assert loaded.fingerprint is not None and loaded.fingerprint.texts == PROBE_TEXTS


def test_the_same_model_under_another_name_is_accepted(with_fingerprint, caplog):
    renamed = Renamed(HashingEncoder(dim=16), "my-copy-of-the-model", noise=1e-4)
    with caplog.at_level(logging.INFO, logger="rag_multihop.association.reranker"):
        loaded = AssociationReranker.load(with_fingerprint, encoder=renamed)
    assert loaded.encoder is renamed
    assert "reproduces the fingerprint of 'hashing-test'" in caplog.text
    loaded.check_encoder(HashingEncoder(dim=16, name="yet-another-name"))


def test_a_different_model_of_the_same_dimension_is_refused_even_under_the_same_name(
    with_fingerprint,
):
    message = (
        r"trained with encoder 'hashing-test' but the given encoder 'hashing-test' \(also dim "
        r"16\) is a different model: it embeds the model's probe texts differently \(lowest "
        r"cosine -?\d\.\d{3}; the same model gives at least 0\.99\)"
    )
    with pytest.raises(ValueError, match=message):
        AssociationReranker.load(with_fingerprint, encoder=Shifted(dim=16))
    loaded = AssociationReranker.load(with_fingerprint)
    with pytest.raises(ValueError, match="is a different model"):
        loaded.check_encoder(Shifted(dim=16))
    with pytest.raises(ValueError, match="is a different model"):
        loaded.with_settings(encoder=Shifted(dim=16))
    with pytest.raises(ValueError, match=r"'hashing-test' has dim 32"):
        loaded.check_encoder(HashingEncoder(dim=32))


def test_a_model_without_fingerprint_checks_the_name_says_so_and_upgrades_on_save(
    without_fingerprint, caplog
):
    assert "probe_texts" not in read_config(without_fingerprint)["encoder"]
    with caplog.at_level(logging.WARNING, logger="rag_multihop.association.reranker"):
        loaded = AssociationReranker.load(without_fingerprint, encoder=HashingEncoder(dim=16))
    assert "has no encoder fingerprint" in caplog.text and "by its name only" in caplog.text
    with pytest.raises(ValueError, match="no encoder fingerprint .* only names can be compared"):
        AssociationReranker.load(without_fingerprint, encoder=Renamed(HashingEncoder(16), "x"))
    loaded.save(without_fingerprint)
    assert read_config(without_fingerprint)["encoder"]["probe_texts"] == [*PROBE_TEXTS]
    with pytest.raises(ValueError, match="is a different model"):
        AssociationReranker.load(without_fingerprint, encoder=Shifted(dim=16))


def edit_encoder(folder, **changes):
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["encoder"].update(changes)
    (folder / CONFIG_FILE).write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / FINGERPRINT_FILE).unlink(), r"missing encoder_fingerprint\.npy"),
        (lambda f: edit_encoder(f, probe_texts="rain"), "probe_texts' must be a list"),
        (lambda f: edit_encoder(f, probe_texts=["rain", ""]), "probe_texts' must be a list"),
        (
            lambda f: edit_encoder(f, probe_texts=["rain"]),
            r"expected float32 \(1, 16\) to match encoder\.probe_texts",
        ),
        (
            lambda f: np.save(f / FINGERPRINT_FILE, np.full((8, 16), np.nan, "float32")),
            "contains NaN",
        ),
    ],
)
def test_a_damaged_fingerprint_fails_at_load_naming_the_file(tmp_path, damage, message):
    folder = artifact_path(fit(HashingEncoder(dim=16)).save(tmp_path / "model"))
    damage(folder)
    with pytest.raises(ValueError, match=message):
        AssociationReranker.load(folder)


@pytest.mark.parametrize(
    ("texts", "vectors", "message"),
    [
        ((), np.zeros((0, 2)), "at least one probe text"),
        (("a", "b"), np.ones((1, 2)), "one vector per probe text: 2 texts, 1 vectors"),
        (("a",), [[np.nan, 1.0]], "NaN"),
    ],
)
def test_fingerprint_bad_input(texts, vectors, message):
    with pytest.raises(ValueError, match=message):
        EncoderFingerprint(texts, vectors)


def test_fingerprint_of_another_dimension_never_matches():
    fingerprint = EncoderFingerprint.of(HashingEncoder(dim=16))
    assert fingerprint.similarity(HashingEncoder(dim=8)) == -1.0
    assert fingerprint.matches(HashingEncoder(dim=16, name="other"))


def test_bundled_minilm_by_path_and_by_hub_name_are_one_model(minilm, tmp_path):
    corpus = ["Rope is a 1948 film.", "Alfred Hitchcock directed Rope.", "Paris is in France."]
    reranker = AssociationReranker(encoder=minilm, training=CONFIG)
    path = reranker.fit(["a", "b", "c"], minilm.encode(corpus), [("a", "b")]).save(tmp_path / "m")
    by_path = SentenceTransformerEncoder(minilm.model_name_or_path)
    assert by_path.name != minilm.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert AssociationReranker.load(path, encoder=by_path).encoder is by_path
    permuted = Renamed(minilm, minilm.name)
    permuted.encode = lambda texts, **_: minilm.encode(texts)[:, ::-1].copy()  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="is a different model"):
        AssociationReranker.load(path, encoder=permuted)
