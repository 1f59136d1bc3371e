"""Conversation helpers for chats over rag-multihop, framework-free and LLM-free.

- :mod:`.condense`: a follow-up question made standalone by carrying the previous turn's
  names into it (:func:`condense`); a model's rewrite checked before it is used
  (:func:`check_rewrite`, :func:`condense_checked`);
- :mod:`.answer`: an extractive answer, the best supporting sentence of each hop cited by
  its card number (:func:`extractive_answer`);
- :mod:`.names`: names and content words read with the graph's heuristic extractor.

Example:
    >>> turn = Turn("Who directed The Salt Lantern?", (Subject("Ilse Marrow", person=True),))
    >>> condense("And where was she born?", [turn]).standalone
    'And where was Ilse Marrow born?'
"""

from rag_multihop.conversation.answer import (
    ExtractiveAnswer,
    Step,
    Support,
    extractive_answer,
    sentences,
)
from rag_multihop.conversation.condense import (
    CONDENSE_PROMPT,
    Condensed,
    Subject,
    Turn,
    check_rewrite,
    condense,
    condense_checked,
    condense_prompt,
)
from rag_multihop.conversation.names import about_a_person, names_in

__all__ = [
    "CONDENSE_PROMPT",
    "Condensed",
    "ExtractiveAnswer",
    "Step",
    "Subject",
    "Support",
    "Turn",
    "about_a_person",
    "check_rewrite",
    "condense",
    "condense_checked",
    "condense_prompt",
    "extractive_answer",
    "names_in",
    "sentences",
]
