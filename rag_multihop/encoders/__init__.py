"""Text encoders: the protocol, the offline MiniLM default (torch, or ONNX Runtime fp32 / int8),
an on-disk embedding cache, an in-memory one, and an encoder's fingerprint (its identity by
vectors)."""

from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.cache import (
    CachedEncoder,
    EmbeddingCache,
    MemoEncoder,
    default_cache_dir,
)
from rag_multihop.encoders.fingerprint import (
    FINGERPRINT_TOLERANCE,
    PROBE_TEXTS,
    EncoderFingerprint,
)
from rag_multihop.encoders.registry import DEFAULT_ENCODER, ENCODERS, make_encoder
from rag_multihop.encoders.sentence_transformer import (
    DEFAULT_MODEL_NAME,
    SentenceTransformerEncoder,
    default_encoder,
    load_encoder,
)

__all__ = [
    "DEFAULT_ENCODER",
    "DEFAULT_MODEL_NAME",
    "ENCODERS",
    "FINGERPRINT_TOLERANCE",
    "PROBE_TEXTS",
    "CachedEncoder",
    "EmbeddingCache",
    "Encoder",
    "EncoderFingerprint",
    "MemoEncoder",
    "SentenceTransformerEncoder",
    "default_cache_dir",
    "default_encoder",
    "load_encoder",
    "make_encoder",
]
