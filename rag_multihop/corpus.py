"""An ordered, validated collection of passages with id look-up.

Example:
    >>> corpus = Corpus([Passage("a", "Alpha."), Passage("b", "Beta.")])
    >>> len(corpus), corpus.index_of("b"), corpus["a"].text
    (2, 1, 'Alpha.')
    >>> as_corpus([Passage("a", "Alpha.")]).ids, as_corpus(corpus) is corpus
    (['a'], True)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from rag_multihop.types import Passage


class Corpus(Sequence[Passage]):
    """Passages in a fixed order; positions line up with embedding matrix rows.

    Raises ``ValueError`` for an empty corpus or duplicate passage ids (naming the first few).
    """

    def __init__(self, passages: Iterable[Passage]) -> None:
        if isinstance(passages, (str, bytes)):
            raise TypeError("a corpus is made of Passage objects, not one string")
        self._passages: tuple[Passage, ...] = tuple(passages)
        if not self._passages:
            raise ValueError("corpus is empty: give at least one passage")
        wrong = next(
            ((i, p) for i, p in enumerate(self._passages) if not isinstance(p, Passage)), None
        )
        if wrong is not None:
            raise TypeError(
                f"a corpus is made of rag_multihop.Passage objects; item {wrong[0]} is a "
                f"{type(wrong[1]).__name__}"
            )
        self._position = {p.id: i for i, p in enumerate(self._passages)}
        if len(self._position) != len(self._passages):
            dupes = [pid for pid, n in Counter(p.id for p in self._passages).items() if n > 1]
            raise ValueError(
                f"corpus has {len(dupes)} duplicate passage id(s), e.g. {dupes[:5]}; "
                "ids must be unique"
            )

    def __len__(self) -> int:
        return len(self._passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self._passages)

    @overload
    def __getitem__(self, key: int | str) -> Passage: ...

    @overload
    def __getitem__(self, key: slice) -> tuple[Passage, ...]: ...

    def __getitem__(self, key: int | str | slice) -> Passage | tuple[Passage, ...]:
        """A passage by position or by id, or a tuple of passages by slice."""
        if isinstance(key, str):
            try:
                return self._passages[self._position[key]]
            except KeyError:
                raise KeyError(f"unknown passage id {key!r}") from None
        return self._passages[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, Passage):
            return key.id in self._position
        return key in self._position

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self._passages]

    def index_of(self, passage_id: str) -> int:
        """Row of ``passage_id`` in the corpus (and in its embedding matrix)."""
        try:
            return self._position[passage_id]
        except KeyError:
            raise KeyError(f"unknown passage id {passage_id!r}") from None

    def texts(self) -> list[str]:
        """The texts encoders see, in corpus order (see :attr:`Passage.embedding_text`)."""
        return [p.embedding_text for p in self._passages]


def as_corpus(passages: Corpus | Iterable[Passage]) -> Corpus:
    """``passages`` as a :class:`Corpus` (a corpus is returned as it is; a list or other
    iterable of passages is checked and wrapped)."""
    return passages if isinstance(passages, Corpus) else Corpus(passages)
