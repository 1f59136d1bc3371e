"""Code shared by the rag-multihop Haystack components (``haystack_integrations.common``, the
place haystack-core-integrations keeps an integration's shared helpers): the one translation
between Haystack and rag-multihop, :mod:`.convert`; and :mod:`.tracing`, which sends
rag-multihop's stage spans to Haystack's tracer (on from import: :func:`instrument` /
:func:`uninstrument`)."""

from __future__ import annotations

from haystack_integrations.common.rag_multihop.tracing import instrument, uninstrument

__all__ = ["instrument", "uninstrument"]
