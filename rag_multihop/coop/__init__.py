"""CoopRAG: question unrolling, unrolling-augmented retrieval, RaLa reranking, chain completion.

Modules, one job each: :mod:`.late_interaction` (RaLa's scores as pure functions),
:mod:`.states` (per-layer token states of a sentence-transformers encoder), :mod:`.store`
(passage states precomputed as float16), :mod:`.settings` (:class:`RaLaSettings`),
:mod:`.rala` (:class:`RaLaReranker`, :class:`RaLaRetriever`), :mod:`.unroll` (question
unrolling), :mod:`.uar` (unrolling-augmented retrieval), :mod:`.keyextract` (KeyExtract's
extractors), :mod:`.reader` (chain completion and answer), :mod:`.pipeline`
(:class:`CoopRAG`). Importing this package needs neither torch nor litellm nor pydantic;
they load on first use. See ``docs/coop.md``.

Example:
    >>> from rag_multihop.coop import RaLaSettings, SCORINGS
    >>> RaLaSettings().scoring, sorted(SCORINGS)
    ('maxsim', ['gap-weighted', 'layer-gap', 'maxsim'])
"""

from rag_multihop.coop.keyextract import (
    KeyRound,
    KeyStep,
    LLMKeyExtractor,
    SimilarityKeyExtractor,
    split_sentences,
)
from rag_multihop.coop.late_interaction import (
    candidate_layers,
    gap_weights,
    layer_gap_maxsim,
    maxsim,
    maxsim_batch,
)
from rag_multihop.coop.pipeline import CoopRAG, CoopResult, CoopSettings, CoopTrace
from rag_multihop.coop.rala import SCORINGS, RaLaReranker, RaLaRetriever, Scoring, state_layout
from rag_multihop.coop.reader import ChainReader, Reading, is_binary_question, unsupported_spans
from rag_multihop.coop.settings import DEFAULT_CANDIDATES, SCORING_NAMES, RaLaSettings
from rag_multihop.coop.signals import SIGNALS
from rag_multihop.coop.states import (
    HiddenStateEncoder,
    HiddenStatesUnavailable,
    StateLayout,
    TokenStates,
)
from rag_multihop.coop.store import PassageStates
from rag_multihop.coop.uar import UAR_MODES, UARResult, UARRetriever, fuse_searches
from rag_multihop.coop.unroll import (
    ANSWER_SLOT,
    UNKNOWN,
    LLMUnroller,
    Triple,
    Unrolling,
    check_unrolling,
    raw_question,
)

__all__ = [
    "ANSWER_SLOT",
    "DEFAULT_CANDIDATES",
    "SCORINGS",
    "SCORING_NAMES",
    "SIGNALS",
    "UAR_MODES",
    "UNKNOWN",
    "ChainReader",
    "CoopRAG",
    "CoopResult",
    "CoopSettings",
    "CoopTrace",
    "HiddenStateEncoder",
    "HiddenStatesUnavailable",
    "KeyRound",
    "KeyStep",
    "LLMKeyExtractor",
    "LLMUnroller",
    "PassageStates",
    "RaLaReranker",
    "RaLaRetriever",
    "RaLaSettings",
    "Reading",
    "Scoring",
    "SimilarityKeyExtractor",
    "StateLayout",
    "TokenStates",
    "Triple",
    "UARResult",
    "UARRetriever",
    "Unrolling",
    "candidate_layers",
    "check_unrolling",
    "fuse_searches",
    "gap_weights",
    "is_binary_question",
    "layer_gap_maxsim",
    "maxsim",
    "maxsim_batch",
    "raw_question",
    "split_sentences",
    "state_layout",
    "unsupported_spans",
]
