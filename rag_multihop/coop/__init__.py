"""CoopRAG: question unrolling, unrolling-augmented retrieval, RaLa reranking, chain completion.

Modules, one job each: :mod:`.late_interaction` (RaLa's scores as pure functions),
:mod:`.states` (per-layer token states of a sentence-transformers encoder), :mod:`.store`
(passage states precomputed as float16), :mod:`.settings` (:class:`CoopSettings`,
:class:`RaLaSettings`), :mod:`.rala` (:class:`RaLaReranker`, :class:`RaLaRetriever`),
:mod:`.unroll` (question unrolling), :mod:`.uar` (unrolling-augmented retrieval),
:mod:`.keyextract` (KeyExtract's extractors), :mod:`.reader` (chain completion and answer),
:mod:`.pipeline` (:class:`CoopRetriever`, the whole method). This package exports what a
user builds the method from; the functions and types behind it stay in their submodules
(e.g. ``rag_multihop.coop.late_interaction.maxsim``). ``CoopRAG``, the old name of
:class:`CoopRetriever`, still imports with a ``DeprecationWarning``. Importing this package
needs neither torch nor litellm nor pydantic; they load on first use. See ``docs/coop.md``.

Example:
    >>> from rag_multihop.coop import RaLaSettings, SCORINGS
    >>> RaLaSettings().scoring, sorted(SCORINGS)
    ('maxsim', ['gap-weighted', 'layer-gap', 'maxsim'])
"""

from typing import Any

from rag_multihop.coop.keyextract import KeyExtractor, LLMKeyExtractor, SimilarityKeyExtractor
from rag_multihop.coop.pipeline import CoopResult, CoopRetriever, CoopTrace, deprecated_name
from rag_multihop.coop.rala import SCORINGS, RaLaReranker, RaLaRetriever
from rag_multihop.coop.reader import ChainReader, Reading
from rag_multihop.coop.settings import CoopSettings, RaLaSettings
from rag_multihop.coop.signals import SIGNALS
from rag_multihop.coop.states import HiddenStateEncoder
from rag_multihop.coop.store import PassageStates
from rag_multihop.coop.uar import UARRetriever
from rag_multihop.coop.unroll import (
    ANSWER_SLOT,
    UNKNOWN,
    LLMUnroller,
    Triple,
    Unroller,
    Unrolling,
    raw_question,
)

__all__ = [
    "ANSWER_SLOT",
    "SCORINGS",
    "SIGNALS",
    "UNKNOWN",
    "ChainReader",
    "CoopResult",
    "CoopRetriever",
    "CoopSettings",
    "CoopTrace",
    "HiddenStateEncoder",
    "KeyExtractor",
    "LLMKeyExtractor",
    "LLMUnroller",
    "PassageStates",
    "RaLaReranker",
    "RaLaRetriever",
    "RaLaSettings",
    "Reading",
    "SimilarityKeyExtractor",
    "Triple",
    "UARRetriever",
    "Unroller",
    "Unrolling",
    "raw_question",
]


def __getattr__(name: str) -> Any:
    """``CoopRAG`` (deprecated) resolves to :class:`CoopRetriever` with a warning."""
    return deprecated_name(name, __name__)
