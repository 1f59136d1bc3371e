"""The signals of CoopRAG (see :mod:`rag_multihop.signals` for the rule).

>>> from rag_multihop.signals import signal_meaning
>>> signal_meaning("search_1_cal", SIGNALS)
'search 1 score calibrated to 0-1, as fused'
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "rala": "token-level match with the question (RaLa, the reranking score)",
        "maxsim": "token-level match on the encoder's last layer (MaxSim)",
        "gap_weight": "RaLa's weight from the gap between the last and an earlier layer",
        "first_stage": "1 where RaLa's lead was too small to take the rank from the first stage",
        "premature_layer": "the earlier encoder layer RaLa contrasted with the last",
        "last_similarity": "pooled similarity to the question on the last layer",
        "premature_similarity": "pooled similarity to the question on the earlier layer",
        "uar": "the searches of the question and its sub-questions fused (UAR)",
        "search_<i>": "score in search <i> (0: the question, then each sub-question)",
        "search_<i>_cal": "search <i> score calibrated to 0-1, as fused",
    }
)
"""What :class:`~rag_multihop.coop.RaLaReranker` (``rala``, ``maxsim``; the gap-weighted
scoring adds ``gap_weight``, ``premature_layer`` and the two pooled similarities) and
:class:`~rag_multihop.coop.UARRetriever` in ``"sub-questions"`` mode (``search_<i>``,
``search_<i>_cal``, ``uar``) write; the first stage's signals are kept."""
