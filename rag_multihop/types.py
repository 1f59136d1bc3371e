"""The currency of the core: passages, queries and ranked candidates.

All three are frozen dataclasses. Stages never mutate them; they return new objects
(``dataclasses.replace`` or :meth:`Candidate.with_score`).

Example:
    >>> p = Passage(id="p1", title="Ada Lovelace", text="Ada Lovelace wrote the first program.")
    >>> c = Candidate(passage=p, score=0.8, signals={"dense": 0.8})
    >>> c2 = c.with_score(0.9, association=0.95)
    >>> (c.score, c2.score, dict(c2.signals))
    (0.8, 0.9, {'dense': 0.8, 'association': 0.95})
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.validation import check_candidates, check_int, check_unicode


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


def _shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


@dataclass(frozen=True)
class Passage:
    """A retrievable unit of text.

    ``id`` must be unique within a corpus. ``title`` is optional; when present it is
    prepended to the text for embedding (``title + "\\n" + text``), the convention of the
    multi-hop QA benchmarks.
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Passage.id must be a non-empty string, got {_shown(self.id)}")
        for name in ("text", "title"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(
                    f"Passage.{name} of passage {self.id!r} must be a string ('' for none), got "
                    f"{type(value).__name__} {_shown(value)}"
                )
        for name in ("id", "text", "title"):
            check_unicode(getattr(self, name), f"Passage.{name} of passage {self.id!r}")
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise ValueError(
                f"Passage.metadata of passage {self.id!r} must be a mapping (a dict) or None, got "
                f"{type(self.metadata).__name__} {_shown(self.metadata)}"
            )
        keys = [key for key in self.metadata or {} if not isinstance(key, str)]
        if keys:
            raise ValueError(
                f"Passage.metadata of passage {self.id!r} must have string keys, got "
                f"{_shown(keys[0])} ({type(keys[0]).__name__})"
            )
        object.__setattr__(self, "metadata", _frozen_mapping(self.metadata))

    @property
    def embedding_text(self) -> str:
        """The text that encoders see: ``title + "\\n" + text`` (or the text alone)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Query:
    """A question, optionally with a precomputed (normalised) embedding."""

    text: str
    id: str = ""
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"Query.text must be a non-empty string, got {self.text!r}")
        if self.embedding is not None:
            shape = np.shape(self.embedding)
            if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] != 1):
                raise ValueError(
                    f"Query.embedding must be one vector, shape (dim,) or (1, dim), got shape "
                    f"{shape}; make one Query per vector"
                )


@dataclass(frozen=True)
class Candidate:
    """A passage with a score, its 1-based rank and every signal that contributed.

    ``signals`` maps a signal name (``"dense"``, ``"bm25"``, ``"association"``, ...) to the
    value it had for this passage, so a later stage or a user can explain the ranking.
    ``rank`` is 0 until a stage orders a list (see :func:`rank_candidates`).
    """

    passage: Passage
    score: float
    rank: int = 0
    signals: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "score", check_score(self.score, f"Candidate {self.passage.id!r}"))
        object.__setattr__(self, "signals", _frozen_mapping(self.signals))

    @property
    def id(self) -> str:
        return self.passage.id

    def with_score(self, score: float, **signals: float) -> Candidate:
        """A copy with a new score and extra signals merged into ``signals``."""
        return replace(self, score=score, signals={**self.signals, **signals})


def check_score(score: object, where: str) -> float:
    """``score`` as a float, or a ``ValueError`` naming ``where`` when it is not a finite
    number: the library rejects NaN and infinity wherever a score enters (see
    docs/guarantees.md), rather than sorting them into arbitrary places.

    >>> check_score(0.5, "x")
    0.5
    >>> check_score(float("nan"), "Candidate 'p1'")
    Traceback (most recent call last):
    ...
    ValueError: Candidate 'p1': score must be a finite number, got nan
    """
    if isinstance(score, bool) or not isinstance(score, int | float | np.floating | np.integer):
        raise ValueError(f"{where}: score must be a finite number, got {score!r}")
    value = float(score)
    if not math.isfinite(value):
        raise ValueError(f"{where}: score must be a finite number, got {value!r}")
    return value


def rank_candidates(candidates: Iterable[Candidate], top_n: int | None = None) -> list[Candidate]:
    """Sort by score (descending, ties by passage id) and set 1-based ranks.

    >>> a = Candidate(Passage("a", "x"), 0.1)
    >>> b = Candidate(Passage("b", "y"), 0.7)
    >>> [(c.id, c.rank) for c in rank_candidates([a, b])]
    [('b', 1), ('a', 2)]
    """
    ordered = sorted(check_candidates(candidates), key=lambda c: (-c.score, c.passage.id))
    if top_n is not None:
        ordered = ordered[: check_int(top_n, "top_n", low=0)]
    return [replace(c, rank=i) for i, c in enumerate(ordered, start=1)]
