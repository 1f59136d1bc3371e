"""``RagMultihopDocumentEmbedder``: documents to vectors with rag-multihop's encoder.

By default the bundled all-MiniLM-L6-v2 (no network); ``model`` names another
sentence-transformers model. Each document is embedded as its ``meta_fields_to_embed``
values and its content joined by ``embedding_separator`` (Haystack's own rule), in batches of
``batch_size``; the result is new documents (``dataclasses.replace``) with unit-length
``embedding``; inputs are never mutated. Set ``meta_fields_to_embed=["title"]`` to embed
``title + "\\n" + text``, the text rag-multihop's benchmark and trained models use.

Example:
    >>> from haystack import Document
    >>> embedder = RagMultihopDocumentEmbedder(meta_fields_to_embed=["title"])
    >>> embedder.text_of(Document(content="Rope is a film.", meta={"title": "Rope"}))
    'Rope\\nRope is a film.'
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.common.rag_multihop.convert import check_encoder_name

from rag_multihop.encoders import DEFAULT_MODEL_NAME, Encoder, load_encoder
from rag_multihop.validation import check_positive_int


@component
class RagMultihopDocumentEmbedder:
    """Embeds documents (see the module docstring).

    Args:
        model: ``"sentence-transformers/all-MiniLM-L6-v2"`` (default) for the bundled MiniLM,
            or any sentence-transformers model path or hub id.
        device: torch device.
        batch_size: texts per forward pass.
        prefix, suffix: strings added around each text before embedding.
        meta_fields_to_embed: ``meta`` keys whose values are embedded before the content.
        embedding_separator: joins the meta values and the content.
        progress_bar: show a progress bar while embedding.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL_NAME,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        prefix: str = "",
        suffix: str = "",
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        progress_bar: bool = False,
    ) -> None:
        self.model = check_encoder_name(model)
        self.device = device
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.prefix = prefix
        self.suffix = suffix
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator
        self.progress_bar = progress_bar
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
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            progress_bar=self.progress_bar,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagMultihopDocumentEmbedder:
        return default_from_dict(cls, data)

    def text_of(self, document: Document) -> str:
        """The text embedded for ``document`` (meta fields, then content, then affixes)."""
        parts = [
            str(document.meta[key])
            for key in self.meta_fields_to_embed
            if document.meta.get(key) is not None
        ]
        text = self.embedding_separator.join([*parts, document.content or ""])
        return self.prefix + text + self.suffix

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """New documents carrying their unit-length embeddings."""
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError(
                "RagMultihopDocumentEmbedder expects a list of Documents; to embed a string "
                "use RagMultihopTextEmbedder"
            )
        if not documents:
            return {"documents": []}
        vectors = self.encoder.encode(
            [self.text_of(d) for d in documents], show_progress=self.progress_bar
        )
        return {
            "documents": [
                replace(d, embedding=[float(v) for v in row])
                for d, row in zip(documents, vectors, strict=True)
            ]
        }

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document]) -> dict[str, list[Document]]:
        """:meth:`run` in a worker thread (embedding is CPU-bound)."""
        return await asyncio.to_thread(self.run, documents)
