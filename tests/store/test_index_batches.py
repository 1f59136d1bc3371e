"""The batch plan of the index build (no Ray needed): the arrays do not depend on how the
passages are batched, the build reports progress per stage, the Ray engine's inputs and the
CLI's engine flags fail with clear errors, and the bulk encoder falls back to fp32 when the
int8 model's fingerprint does not match."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.cli import main
from rag_multihop.encoders import bulk
from rag_multihop.graph.extract import HeuristicExtractor
from rag_multihop.store import CorpusIndex, IndexSettings
from rag_multihop.store.batches import build_arrays
from rag_multihop.store.ray_build import expand_inputs
from rag_multihop.store.segment import StagedSegment
from rag_multihop.store.stream import stream_arrays
from rag_multihop.testing import polish_wedding_passages
from rag_multihop.validation import l2_normalize


@pytest.fixture
def passages() -> list[Passage]:
    found = polish_wedding_passages()
    untitled = [Passage(f"u{i}", p.text, "") for i, p in enumerate(found)]
    return [*found, *untitled]


def _vectors(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((n, 4)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_the_arrays_do_not_depend_on_the_batch_size(passages) -> None:
    vectors = _vectors(len(passages))
    one = build_arrays(passages, vectors, IndexSettings(), HeuristicExtractor(), batch_size=1)
    big = build_arrays(passages, vectors, IndexSettings(), HeuristicExtractor(), batch_size=512)
    assert one.keys() == big.keys()
    for name in one:
        assert np.array_equal(one[name], big[name]), name
    assert len(one["link.dst"]) > 0 and len(one["glink.dst"]) > 0


def test_a_build_reports_each_stage_per_batch(tmp_path, passages) -> None:
    seen = []
    CorpusIndex.build(
        tmp_path / "idx",
        passages,
        _vectors(len(passages)),
        progress=lambda *args: seen.append(args),
    )
    n = len(passages)
    assert seen == [("read names", n, n), ("find links", n, n)]


def test_an_empty_compaction_still_writes_every_array(tmp_path, passages) -> None:
    index = CorpusIndex.build(tmp_path / "idx", passages, _vectors(len(passages)))
    index.delete([p.id for p in passages])
    index.compact()
    assert index.snapshot().n_live == 0


def test_ray_inputs_are_checked(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"matches no shard file"):
        expand_inputs([str(tmp_path / "*.jsonl")])
    with pytest.raises(FileNotFoundError, match=r"input shard not found: .*missing.jsonl"):
        expand_inputs([str(tmp_path / "missing.jsonl")])
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "b.parquet").write_bytes(b"")
    (tmp_path / "c.csv").write_text("id,text\n")
    with pytest.raises(ValueError, match=r"mix JSON Lines and Parquet"):
        expand_inputs([str(tmp_path / "a.jsonl"), str(tmp_path / "b.parquet")])
    with pytest.raises(ValueError, match=r"'.*c.csv' is neither JSON Lines nor Parquet"):
        expand_inputs([str(tmp_path / "c.csv")])
    files, kind, filesystem = expand_inputs([str(tmp_path / "*.jsonl")])
    assert files == [str(tmp_path / "a.jsonl")] and kind == "json" and filesystem is None


def test_cli_engine_flags_need_their_sources(tmp_path, capsys) -> None:
    shard = tmp_path / "a.jsonl"
    shard.write_text('{"id": "p1", "text": "Some text."}\n')
    code = main(
        [
            "index",
            "build",
            "--index",
            str(tmp_path / "i"),
            "--engine",
            "ray",
            "--passages",
            str(shard),
        ]
    )
    assert code == 2
    assert "--engine ray reads shards: give --input" in capsys.readouterr().err
    code = main(["index", "build", "--index", str(tmp_path / "i"), "--input", str(shard)])
    assert code == 2
    assert "give the passages with --passages FILE" in capsys.readouterr().err


class _Toy:
    def __init__(self, name: str, sign: float) -> None:
        self.name, self.dim, self.sign = name, 2, sign

    def encode(self, texts, *, show_progress=False):
        return np.array([[self.sign * len(t), 1.0] for t in texts], dtype=np.float32)


def test_bulk_encoder_falls_back_to_fp32_when_the_fingerprint_differs(monkeypatch, caplog):
    models = {"minilm": _Toy("minilm", 1.0), "minilm-int8": _Toy("minilm-int8", -1.0)}
    monkeypatch.setattr(bulk, "make_encoder", lambda name: models[name])
    monkeypatch.setattr(bulk, "cpu_has_amx_bf16", lambda: False)
    with caplog.at_level(logging.WARNING, logger="rag_multihop.encoders.bulk"):
        name, reason = bulk.bulk_encoder_name(10_000)
    assert name == "minilm" and "fingerprint differs from fp32" in reason
    assert "fingerprint differs" in caplog.text
    models["minilm-int8"] = _Toy("minilm-int8", 1.0)
    assert bulk.bulk_encoder_name(10_000)[0] == "minilm-int8"
    assert bulk.bulk_encoder_name(100)[0] == "minilm"
    # a CPU with AMX gets bfloat16 on torch instead, checked the same way
    monkeypatch.setattr(bulk, "cpu_has_amx_bf16", lambda: True)
    models["minilm-bf16"] = _Toy("minilm-bf16", -1.0)
    assert bulk.bulk_encoder_name(10_000)[0] == "minilm"
    models["minilm-bf16"] = _Toy("minilm-bf16", 1.0)
    assert bulk.bulk_encoder_name(10_000) == (
        "minilm-bf16",
        "bulk job: minilm-bf16, fingerprint matches fp32 (lowest probe cosine 1.0000)",
    )


def test_bulk_encoder_falls_back_when_onnx_is_missing(monkeypatch):
    def make(name):
        if name == "minilm-int8":
            raise ImportError("'onnxruntime' is needed for this feature")
        return _Toy(name, 1.0)

    monkeypatch.setattr(bulk, "make_encoder", make)
    monkeypatch.setattr(bulk, "cpu_has_amx_bf16", lambda: False)
    name, reason = bulk.bulk_encoder_name(None)
    assert name == "minilm" and "minilm-int8 encoder is unavailable" in reason


@pytest.mark.parametrize("chunk, batch_size", [(1, 1), (3, 2), (1000, 512)])
def test_the_streamed_build_writes_the_arrays_of_the_batch_plan(
    tmp_path, passages, chunk, batch_size
) -> None:
    vectors = _vectors(len(passages))
    unit = l2_normalize(vectors)
    expected = build_arrays(passages, unit, IndexSettings(), HeuristicExtractor())
    staged = StagedSegment(tmp_path)
    chunks = [
        (passages[i : i + chunk], vectors[i : i + chunk]) for i in range(0, len(passages), chunk)
    ]
    found = stream_arrays(
        staged, chunks, IndexSettings(), HeuristicExtractor(), dim=4, batch_size=batch_size
    )
    assert found.keys() == expected.keys()
    for name in expected:
        assert found[name].dtype == expected[name].dtype, name
        assert np.array_equal(found[name], expected[name]), name
        if name != "vectors":
            assert np.array_equal(np.load(staged.folder / f"{name}.npy"), expected[name]), name
    assert sorted(p.name for p in staged.folder.iterdir()) == sorted(f"{k}.npy" for k in expected)


def test_an_index_built_from_batches_equals_one_built_at_once(tmp_path, passages) -> None:
    vectors = _vectors(len(passages))
    whole = CorpusIndex.build(tmp_path / "whole", passages, vectors)
    batches = ((passages[i : i + 5], vectors[i : i + 5]) for i in range(0, len(passages), 5))
    streamed = CorpusIndex.build_batches(tmp_path / "streamed", batches)
    a, b = whole.snapshot(), streamed.snapshot()
    assert list(a.passage_ids) == list(b.passage_ids)
    for segment_a, segment_b in zip(a.segments.segments, b.segments.segments, strict=True):
        assert segment_a.arrays.keys() == segment_b.arrays.keys()
        for name in segment_a.arrays:
            assert np.array_equal(segment_a[name], segment_b[name]), name


def test_a_build_from_batches_refuses_repeated_ids_and_empty_input(tmp_path, passages) -> None:
    vectors = _vectors(len(passages))
    twice = [(passages[:3], vectors[:3]), (passages[2:4], vectors[2:4])]
    with pytest.raises(ValueError, match=r"repeat id\(s\) \['" + passages[2].id + "'\\]"):
        CorpusIndex.build_batches(tmp_path / "twice", twice)
    with pytest.raises(ValueError, match=r"batches holds no passages"):
        CorpusIndex.build_batches(tmp_path / "none", [([], np.zeros((0, 4)))])
    with pytest.raises(ValueError, match=r"vectors"):
        CorpusIndex.build_batches(
            tmp_path / "dims", [(passages[:1], vectors[:1]), (passages[1:2], np.ones((1, 3)))]
        )
