from __future__ import annotations

import numpy as np
import pytest

from rag_multihop.encoders import CachedEncoder, EmbeddingCache, Encoder


def test_hashing_encoder_satisfies_the_protocol(hashing_encoder):
    assert isinstance(hashing_encoder, Encoder)


def test_cache_embeds_each_text_once_across_instances(tmp_path, hashing_encoder):
    first = CachedEncoder(hashing_encoder, tmp_path)
    a = first.encode(["alpha beta", "gamma", "alpha beta"])
    assert first.cache.misses == 2 and hashing_encoder.calls == 1
    second = CachedEncoder(hashing_encoder, tmp_path)  # a fresh process would see the same files
    b = second.encode(["gamma", "alpha beta"])
    assert hashing_encoder.calls == 1 and second.cache.hits == 2
    np.testing.assert_array_equal(b, a[[1, 0]])


def test_cache_is_keyed_by_model_name(tmp_path, hashing_encoder):
    from rag_multihop.testing import HashingEncoder

    CachedEncoder(hashing_encoder, tmp_path).encode(["x"])
    other = HashingEncoder(name="another-model")
    CachedEncoder(other, tmp_path).encode(["x"])
    assert other.calls == 1


def test_cache_ignores_a_corrupted_shard(tmp_path, hashing_encoder):
    CachedEncoder(hashing_encoder, tmp_path).encode(["x"])
    cache = EmbeddingCache(tmp_path, hashing_encoder.name, hashing_encoder.dim)
    (cache.directory / "shard-broken.npz").write_bytes(b"not a zip file")
    assert len(EmbeddingCache(tmp_path, hashing_encoder.name, hashing_encoder.dim)) == 1


def test_cache_rejects_nan_from_the_wrapped_encoder(tmp_path):
    class NaNEncoder:
        name, dim = "nan", 2

        def encode(self, texts, *, show_progress=False):
            return np.full((len(texts), 2), np.nan, dtype=np.float32)

    with pytest.raises(ValueError, match="NaN"):
        CachedEncoder(NaNEncoder(), tmp_path).encode(["x"])


def test_empty_input_gives_empty_matrix(tmp_path, hashing_encoder):
    assert CachedEncoder(hashing_encoder, tmp_path).encode([]).shape == (0, hashing_encoder.dim)


def test_minilm_offline_gives_unit_vectors_and_similar_texts_score_higher(minilm):
    vectors = minilm.encode(
        ["The cat sat on the mat.", "A cat is sitting on a rug.", "Stock prices fell."]
    )
    assert vectors.shape == (3, 384) and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert minilm.name == "sentence-transformers/all-MiniLM-L6-v2"


def test_minilm_in_bfloat16_gives_the_fp32_vectors_under_its_own_name(minilm):
    """``minilm-bf16``: the same model in bfloat16 (AMX's type); its float32 unit rows are
    the fp32 model's to ~1e-4, in input order, and its name keeps caches apart."""
    from rag_multihop.encoders import make_encoder

    texts = [
        "Rope is a 1948 film directed by Alfred Hitchcock.",
        "x",
        "The Eiffel Tower is in Paris. " * 40,  # long: sorted first inside the call
        *[f"passage number {i} about rivers" for i in range(20)],  # > SMALL_CALL texts
    ]
    bf16 = make_encoder("minilm-bf16")
    vectors = bf16.encode(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * minilm.encode(texts)).sum(axis=1)
    assert cosines.min() > 0.999
    assert bf16.name == "sentence-transformers/all-MiniLM-L6-v2+bf16" != minilm.name
    with pytest.raises(ValueError, match="dtype must be one of"):
        make_encoder("minilm").__class__("m", dtype="float16")
