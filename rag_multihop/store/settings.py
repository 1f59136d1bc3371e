"""The settings that shape a :class:`~rag_multihop.store.CorpusIndex`, fixed at creation.

Example:
    >>> IndexSettings().ann, IndexSettings(ann="HNSW32").to_dict()["ann"]
    ('flat', 'HNSW32')
    >>> IndexSettings(context_window=0)
    Traceback (most recent call last):
    ...
    ValueError: context_window must be a positive integer, got 0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_multihop.index.ann import check_ann
from rag_multihop.multihop.links import DEFAULT_WINDOW
from rag_multihop.multihop.titles import DEFAULT_MAX_WORDS
from rag_multihop.validation import check_positive_int

GRAPH_MAX_TITLE_WORDS = 8
"""The longest title the entity graph's title links look for (``build_entity_graph``'s
default)."""


@dataclass(frozen=True)
class IndexSettings:
    """What the stored structures depend on (stored in every manifest).

    Attributes:
        context_window: words either side of a title name kept as the link's context
            (:class:`~rag_multihop.multihop.MultiHopSettings` ``context_window`` must match).
        subjects: each passage is also known by the subjects read from its text when the
            text does not spell its title out
            (:func:`~rag_multihop.multihop.subjects.passage_names`), in the title dictionary
            and the title links (:class:`~rag_multihop.multihop.MultiHopSettings`
            ``subjects`` must match).
        title_max_words: the longest title, in words, found in texts (title links).
        graph_max_title_words: the same for the entity graph's title links.
        ann: how each segment's vectors are searched: ``"flat"`` (exact, FAISS
            ``IndexFlatIP`` built when a snapshot opens: right for up to ~100k passages) or
            a FAISS factory string such as ``"HNSW32"`` (built when the segment is written,
            by :func:`~rag_multihop.index.ann.make_ann_index`, and stored in it; query cost
            stops growing linearly with the corpus); checked when the settings are made.
    """

    context_window: int = DEFAULT_WINDOW
    subjects: bool = True
    title_max_words: int = DEFAULT_MAX_WORDS
    graph_max_title_words: int = GRAPH_MAX_TITLE_WORDS
    ann: str = "flat"

    def __post_init__(self) -> None:
        for name in ("context_window", "title_max_words", "graph_max_title_words"):
            check_positive_int(getattr(self, name), name)
        if not isinstance(self.subjects, bool):
            raise ValueError(f"subjects must be True or False, got {self.subjects!r}")
        check_ann(self.ann, auto=False)  # one kind per segment, chosen when it is written

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> IndexSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown IndexSettings field(s) {unknown}; known: {sorted(known)}")
        return cls(**values)
