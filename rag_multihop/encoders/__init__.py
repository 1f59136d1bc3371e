"""Text encoders: the protocol, the offline MiniLM default and an on-disk embedding cache."""

from rag_multihop.encoders.base import Encoder
from rag_multihop.encoders.cache import CachedEncoder, EmbeddingCache, default_cache_dir
from rag_multihop.encoders.sentence_transformer import (
    DEFAULT_MODEL_NAME,
    SentenceTransformerEncoder,
    default_encoder,
    load_encoder,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "CachedEncoder",
    "EmbeddingCache",
    "Encoder",
    "SentenceTransformerEncoder",
    "default_cache_dir",
    "default_encoder",
    "load_encoder",
]
