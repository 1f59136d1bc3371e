"""Haystack joiners of rag-multihop.

- :class:`PITDocumentJoiner`: calibrated (PIT) fusion, a drop-in for ``DocumentJoiner``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from haystack_integrations.components.joiners.rag_multihop.pit_joiner import PITDocumentJoiner

try:
    __version__ = version("rag-multihop-haystack")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["PITDocumentJoiner", "__version__"]
