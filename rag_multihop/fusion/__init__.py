"""Calibrated fusion of heterogeneous score lists (PhaseGraph) as pure functions, plus a retriever.

- :mod:`.calibration`: one list onto a common scale (``pit``, ``minmax``, ``zscore``, ``max``);
- :mod:`.functions`: N calibrated lists into one score (``linear``, ``boltzmann``, ``rrf``,
  ``dbsf``);
- :mod:`.settings`: :class:`FusionSettings` (every knob, validated once) and its checks;
- :mod:`.core`: :func:`fuse_lists`, the whole pipeline (validation, pool caps, calibration,
  fusion, consensus boost), and :func:`fuse_candidates` (named candidate lists in, ranked
  candidates out);
- :mod:`.retriever`: :class:`FusionRetriever`, which fuses any number of core retrievers.

Example:
    >>> result = fuse_lists([(["a", "b"], [0.9, 0.1]), (["b", "c"], [5.0, 1.0])])
    >>> result.ids
    ('b', 'a', 'c')
"""

from rag_multihop.fusion.calibration import CALIBRATIONS, calibrate, register_calibration
from rag_multihop.fusion.core import FusionResult, align_lists, fuse_candidates, fuse_lists
from rag_multihop.fusion.functions import FUSIONS, ScoreTable, register_fusion
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.fusion.settings import FusionSettings, check_settings
from rag_multihop.fusion.signals import SIGNALS

__all__ = [
    "CALIBRATIONS",
    "FUSIONS",
    "SIGNALS",
    "FusionResult",
    "FusionRetriever",
    "FusionSettings",
    "ScoreTable",
    "align_lists",
    "calibrate",
    "check_settings",
    "fuse_candidates",
    "fuse_lists",
    "register_calibration",
    "register_fusion",
]
