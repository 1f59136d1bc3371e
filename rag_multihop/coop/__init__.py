"""CoopRAG: question unrolling, unrolling-augmented retrieval, RaLa reranking, chain completion.

Modules, one job each: :mod:`.late_interaction` (RaLa's scores as pure functions),
:mod:`.states` (per-layer token states of a sentence-transformers encoder), :mod:`.store`
(passage states precomputed as float16), :mod:`.settings` (:class:`RaLaSettings`),
:mod:`.rala` (:class:`RaLaReranker`, :class:`RaLaRetriever`). Importing this package needs
neither torch nor litellm; they load on first use. See ``docs/coop.md``.

Example:
    >>> from rag_multihop.coop import RaLaSettings, SCORINGS
    >>> RaLaSettings().scoring, sorted(SCORINGS)
    ('maxsim', ['gap-weighted', 'layer-gap', 'maxsim'])
"""

from rag_multihop.coop.late_interaction import (
    candidate_layers,
    gap_weights,
    layer_gap_maxsim,
    maxsim,
    maxsim_batch,
)
from rag_multihop.coop.rala import SCORINGS, RaLaReranker, RaLaRetriever, Scoring, state_layout
from rag_multihop.coop.settings import DEFAULT_CANDIDATES, SCORING_NAMES, RaLaSettings
from rag_multihop.coop.states import (
    HiddenStateEncoder,
    HiddenStatesUnavailable,
    StateLayout,
    TokenStates,
)
from rag_multihop.coop.store import PassageStates

__all__ = [
    "DEFAULT_CANDIDATES",
    "SCORINGS",
    "SCORING_NAMES",
    "HiddenStateEncoder",
    "HiddenStatesUnavailable",
    "PassageStates",
    "RaLaReranker",
    "RaLaRetriever",
    "RaLaSettings",
    "Scoring",
    "StateLayout",
    "TokenStates",
    "candidate_layers",
    "gap_weights",
    "layer_gap_maxsim",
    "maxsim",
    "maxsim_batch",
    "state_layout",
]
