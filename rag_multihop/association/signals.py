"""The signals of AAR (see :mod:`rag_multihop.signals` for the rule).

>>> sorted(SIGNALS)
['association', 'cosine', 'retrieval_score']
"""

from types import MappingProxyType

SIGNALS = MappingProxyType(
    {
        "association": "association with the question, learned from passages used together",
        "cosine": "similarity to the question (the association model's encoder)",
        "retrieval_score": "the first stage's score, kept by the framework rerankers",
    }
)
"""What :class:`~rag_multihop.association.AssociationReranker` writes (``association``,
``cosine``; the blended score is the candidate's score) and what the LlamaIndex and Haystack
AAR rerankers add (``retrieval_score``, the score the node or document came with)."""
