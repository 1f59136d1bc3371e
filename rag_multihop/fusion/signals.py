"""The signals of calibrated fusion (see :mod:`rag_multihop.signals` for the rule).

>>> from rag_multihop.signals import signal_meaning
>>> signal_meaning("graph_cal", SIGNALS)
"graph's score calibrated to 0-1, as fused"
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "<system>": "<system>'s own score, before calibration",
        "<system>_cal": "<system>'s score calibrated to 0-1, as fused",
    }
)
"""What :func:`~rag_multihop.fusion.fuse_candidates` (and so
:class:`~rag_multihop.fusion.FusionRetriever` and the framework fusers) writes for every
system that listed a passage; ``<system>`` is the name the list was given."""
