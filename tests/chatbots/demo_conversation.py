"""A newcomer's ten-turn conversation over the demo corpus: follow-ups (a pronoun, an
elliptical "and ...?") mixed with unrelated new questions, each with the demo passages its
answer must cite. Shared by the chat tests and the browser test."""

from __future__ import annotations

TURNS: list[tuple[str, frozenset[str]]] = [
    ("Where was the founder of Veldmark Ropeworks born?",
     frozenset({"veldmark-ropeworks", "marit-hallendor"})),
    ("When did she die?", frozenset({"marit-hallendor"})),
    ("Who directed The Salt Lantern?", frozenset({"the-salt-lantern", "ilse-marrow"})),
    ("And where was she born?", frozenset({"ilse-marrow"})),
    ("Which shipyard built the flagship of the Averil Line?",
     frozenset({"averil-line", "mv-serwin-star"})),
    ("When was it launched?", frozenset({"mv-serwin-star"})),
    ("In which town was the band that recorded the album Copper Tides formed?",
     frozenset({"copper-tides", "the-gull-wardens"})),
    ("Who founded them?", frozenset({"the-gull-wardens"})),
    ("Which comet was discovered first, Comet Tavish or Comet Tavell?",
     frozenset({"comet-tavish", "comet-tavell"})),
    ("Who discovered it?", frozenset({"comet-tavish"})),
]  # fmt: skip
"""(question, ids of the passages its answer must cite), in conversation order."""

NEW_QUESTIONS = frozenset({0, 2, 4, 6, 8})
"""Turns that start a new subject: they are searched for as asked, and share no cited
passage with the turn before."""
