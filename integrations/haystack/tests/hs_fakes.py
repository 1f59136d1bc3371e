"""Deterministic fakes for the Haystack integration's tests: text and document embedder
components over :func:`rag_multihop.testing.hashing_vectors` (bag of words hashed into
buckets; no model, no network). The rag-multihop encoder is
:class:`rag_multihop.testing.HashingEncoder`."""

from __future__ import annotations

from dataclasses import replace

from haystack import Document, component

from rag_multihop.testing import hashing_vectors

__all__ = ["HashingDocumentEmbedder", "HashingTextEmbedder"]


@component
class HashingTextEmbedder:
    """A user's own Haystack text embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        self.runs += 1
        return {"embedding": hashing_vectors([text], self.dim)[0].tolist()}


@component
class HashingDocumentEmbedder:
    """A user's own Haystack document embedder over :func:`hashing_vectors`; counts its runs."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.runs = 0

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.runs += 1
        vectors = hashing_vectors([d.content or "" for d in documents], self.dim)
        return {
            "documents": [
                replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors, strict=True)
            ]
        }
