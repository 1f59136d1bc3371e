"""Named encoders: the bundled MiniLM on torch (the default; or in bfloat16) or on ONNX Runtime.

Each name is one model *and* one backend, and each gives the encoder a distinct ``name``
(the embedding cache's key and the identity written into saved AAR models), so vectors of
two backends never mix.

Example:
    >>> sorted(ENCODERS)
    ['minilm', 'minilm-bf16', 'minilm-int8', 'minilm-onnx']
    >>> make_encoder("minilm-fp16")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown encoder 'minilm-fp16'; choose from: minilm, minilm-bf16, ...
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rag_multihop.encoders.base import Encoder

ENCODERS: Mapping[str, str] = MappingProxyType(
    {
        "minilm": "all-MiniLM-L6-v2 on torch via sentence-transformers, fp32 (the default)",
        "minilm-bf16": "the same model on torch in bfloat16 (probe cosine 0.9999 to fp32; fast on "
        "CPUs with Intel AMX, slow on others)",
        "minilm-onnx": "the same model on ONNX Runtime, fp32 (the same vectors up to float "
        "error; needs the onnx extra)",
        "minilm-int8": "the same model on ONNX Runtime, fused graph with dynamic int8 "
        "quantisation, per-channel weight scales (cosine ~0.997 to fp32; needs the onnx extra)",
    }
)
"""Encoder names and what they are (``rag-multihop bench --encoder NAME``)."""

DEFAULT_ENCODER = "minilm"


def make_encoder(name: str = DEFAULT_ENCODER, *, threads: int | None = None) -> Encoder:
    """The encoder registered as ``name``; ``threads`` caps its threads on large calls."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose from: {', '.join(sorted(ENCODERS))}")
    if name in ("minilm", "minilm-bf16"):
        from rag_multihop import encoders  # looked up on the package, where it can be replaced

        options: dict[str, Any] = {} if threads is None else {"threads": threads}
        if name == "minilm-bf16":
            options["dtype"] = "bfloat16"
        return encoders.default_encoder(**options)
    from rag_multihop.encoders.onnx import OnnxEncoder

    return OnnxEncoder.minilm(quantize="int8" if name == "minilm-int8" else "none", threads=threads)
