"""RaLa's token-vector codecs and the compressed PassageStates store (no model needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop._atomic import ArtifactError, artifact_path
from rag_multihop.coop import PassageStates, RaLaSettings
from rag_multihop.coop.codecs import CODEC_NAMES, DEFAULT_CODEC, ResidualCodec, fit_codec
from rag_multihop.coop.late_interaction import maxsim_batch
from rag_multihop.coop.states import StateLayout, TokenStates

DIM = 384


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _clustered_rows(n: int, seed: int = 0, clusters: int = 64) -> np.ndarray:
    """Unit rows around a few directions, as transformer token states are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    return _unit(centres[rng.integers(clusters, size=n)] + 0.6 * rng.normal(size=(n, DIM)))


def _passages(n: int, tokens: int = 80, seed: int = 0) -> list[TokenStates]:
    rows = _clustered_rows(n * tokens, seed)
    rng = np.random.default_rng(seed)
    return [
        TokenStates(
            rows[i * tokens : (i + 1) * tokens][None],
            np.zeros((0, DIM), np.float32),
            rng.integers(0, 30522, size=tokens + 5).astype(np.int32),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("name", "mean_cosine"),
    [("float16", 0.99999), ("int8", 0.9998), ("residual-4bit", 0.99), ("residual-2bit", 0.95)],
)
def test_round_trip_error_is_bounded(name: str, mean_cosine: float) -> None:
    rows = _clustered_rows(5_000)
    codec = fit_codec(name, rows, seed=0)
    decoded = np.asarray(codec.decode(codec.encode(rows)), dtype=np.float32)
    assert decoded.shape == rows.shape
    cosines = (decoded * rows).sum(axis=1)
    assert cosines.mean() >= mean_cosine, cosines.mean()
    assert np.allclose(np.linalg.norm(decoded, axis=1), 1.0, atol=2e-3)
    assert (
        codec.bytes_per_row(DIM)
        == {
            "float16": 768,
            "int8": 386,
            "residual-4bit": 194,
            "residual-2bit": 98,
        }[name]
    )


def test_the_residual_beats_its_centroid_alone() -> None:
    rows = _clustered_rows(5_000)
    codec = fit_codec("residual-2bit", rows, seed=0)
    assert isinstance(codec, ResidualCodec)
    payload = codec.encode(rows)
    centroid_only = _unit(codec.centroids[payload["centroid"].astype(int)])
    assert (codec.decode(payload) * rows).sum(1).mean() > (centroid_only * rows).sum(1).mean()


def test_maxsim_scores_survive_the_2bit_codec() -> None:
    """RaLa's score, not just the rows: MaxSim of decoded passages stays close and ranks alike."""
    passages = _passages(60)
    rng = np.random.default_rng(1)  # a query sharing tokens with passage 3, as a question does
    query = _unit(passages[3].tokens[0, :12] + 0.8 * rng.normal(size=(12, DIM)) / np.sqrt(DIM))
    exact = maxsim_batch(query, [p.tokens[0] for p in passages])
    store = PassageStates(
        [f"p{i}" for i in range(60)],
        passages,
        StateLayout((6,)),
        encoder_name="toy",
        codec="residual-2bit",
    )
    assert DEFAULT_CODEC == "float16"
    decoded = [s.tokens[0] for s in store.get([f"p{i}" for i in range(60)]) if s is not None]
    packed = maxsim_batch(query, decoded)
    assert np.abs(packed - exact).max() < 0.05
    assert int(np.argmax(packed)) == int(np.argmax(exact)) == 3


def test_bad_rows_are_refused_naming_the_problem() -> None:
    rows = _clustered_rows(100)
    rows[7, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or inf values \\(first at row 7"):
        fit_codec("residual-2bit", rows)
    with pytest.raises(ValueError, match="no token rows"):
        fit_codec("int8", np.zeros((0, DIM), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        fit_codec("int8", np.zeros(DIM, np.float32))
    codec = fit_codec("residual-2bit", _clustered_rows(500))
    with pytest.raises(ValueError, match="dimension 16, the codec has 384"):
        codec.encode(np.ones((3, 16), np.float32))
    with pytest.raises(ValueError, match=r"codec must be one of .*'residual-2bit'.*got 'pq'"):
        fit_codec("pq", rows)
    with pytest.raises(ValueError, match="codec must be one of"):
        RaLaSettings(codec="int4")
    with pytest.raises(ValueError, match="NaN or inf"):
        PassageStates(
            ["a"],
            [TokenStates(rows[None, 5:10], np.zeros((0, DIM), np.float32), np.arange(5))],
            StateLayout((6,)),
            encoder_name="toy",
            codec="int8",
        )


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_save_load_round_trip_with_mmap(codec: str, tmp_path) -> None:
    passages = _passages(30)
    ids = [f"p{i}" for i in range(30)]
    store = PassageStates(ids, passages, StateLayout((6,)), encoder_name="toy", codec=codec)
    store.save(tmp_path / "s")
    loaded = PassageStates.load(tmp_path / "s", mmap=True)
    assert loaded.codec.name == codec and loaded.nbytes == store.nbytes
    assert all(isinstance(a, np.memmap) for a in loaded.payload.values())
    for before, after in zip(store.get(ids), loaded.get(ids), strict=True):
        assert before is not None and after is not None
        assert np.array_equal(before.tokens, after.tokens)
        assert np.array_equal(before.ids, after.ids) and after.ids.dtype == np.int32
    assert loaded.get(["missing", "p3"])[0] is None


def test_the_2bit_store_is_within_8x_the_dense_index() -> None:
    """80 tokens a passage (2Wiki's mean is 78) of 384 dimensions; dense is 1,536 bytes."""
    passages = _passages(120)
    ids = [f"p{i}" for i in range(120)]
    float16 = PassageStates(ids, passages, StateLayout((6,)), encoder_name="toy", codec="float16")
    packed = float16.recode("residual-2bit")
    dense = 4 * DIM
    assert float16.bytes_per_passage > 40 * dense
    assert packed.bytes_per_passage <= 8 * dense  # codebook included


def test_a_float16_store_of_format_1_still_loads_and_recodes(tmp_path) -> None:
    """A store written before codecs (format 1: float16 tokens.npy, int32 token ids)."""
    passages = _passages(5)
    ids = [f"p{i}" for i in range(5)]
    store = PassageStates(ids, passages, StateLayout((6,)), encoder_name="toy", codec="float16")
    store.save(tmp_path / "old")
    folder = artifact_path(tmp_path / "old")
    config = json.loads((folder / "config.json").read_text())
    config["format_version"] = 1
    del config["codec"], config["payload"]
    config["dtype"] = "float16"
    (folder / "config.json").write_text(json.dumps(config))
    np.save(folder / "token_ids.npy", store.token_ids.astype(np.int32))
    old = PassageStates.load(tmp_path / "old")
    assert old.codec.name == "float16"
    [first] = old.get(["p0"])
    assert first is not None and np.array_equal(first.tokens, passages[0].tokens.astype("f2"))
    assert old.recode("int8").codec.name == "int8"

    config["format_version"] = 3
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match="unsupported PassageStates format_version 3"):
        PassageStates.load(tmp_path / "old")


def test_damaged_codec_files_fail_at_load_naming_the_file(tmp_path) -> None:
    passages = _passages(10)
    ids = [f"p{i}" for i in range(10)]
    store = PassageStates(
        ids, passages, StateLayout((6,)), encoder_name="toy", codec="residual-2bit"
    )
    store.save(tmp_path / "s")
    folder = artifact_path(tmp_path / "s")
    centroids = np.load(folder / "codec.centroids.npy")
    np.save(folder / "codec.centroids.npy", centroids[:, :16])
    with pytest.raises(ArtifactError, match="not a valid PassageStates config"):
        PassageStates.load(tmp_path / "s")
    (folder / "codec.centroids.npy").unlink()
    with pytest.raises(ArtifactError, match="codec.centroids.npy is not a readable array"):
        PassageStates.load(tmp_path / "s")
    np.save(folder / "codec.centroids.npy", centroids)
    np.save(folder / "residual.npy", np.load(folder / "residual.npy")[:, :10])
    with pytest.raises(ArtifactError, match="do not belong together"):
        PassageStates.load(tmp_path / "s")
