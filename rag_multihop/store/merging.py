"""When a write folds the small segments at the end of an index into its own segment.

Every write appends one segment, and a reader opening a version (or a writer reading it)
pays for each segment it lists: an index fed one document at a time all day would slow
down until someone ran :meth:`~rag_multihop.store.CorpusIndex.compact`. A
:class:`MergePolicy` keeps the number of segments logarithmic in the writes, as
size-tiered merging in log-structured stores does: a segment's *tier* is the order of
magnitude (in ``factor``) of its live passages, and when ``factor`` segments of one tier
trail the index (smaller ones between them ride along), the write that makes them so
rewrites them with its own passages as one segment, of the next tier. A passage is so
rewritten about once per tier it climbs, a merge never rewrites a segment for the sake of
smaller ones alone, and no merge writes more than ``max_rows`` live passages (larger
segments wait for ``compact()``). The first segment (a build, a compaction) is never merged
by a write.

>>> policy = MergePolicy(factor=3, max_rows=100)
>>> policy.merge_from([50, 1, 1], 1)  # three of tier 0 with the pending write: merged
1
>>> policy.merge_from([50, 1, 20], 1) is None  # 20 is of tier 2: no third of tier 0
True
>>> policy.merge_from([50, 9, 10, 20], 5)  # three of tier 2 (9..26), one smaller after
1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_multihop.validation import check_positive_int


@dataclass(frozen=True)
class MergePolicy:
    """Size-tiered merging of the segments a write leaves at the end of the index.

    Args:
        factor: how many trailing segments of one tier make a write merge them; a tier
            spans ``factor`` times the passages of the one below. At least 2.
        max_rows: no merge writes a segment of more live passages than this (larger ones
            are left to ``compact()``): the longest a write can take for merging is that of
            adding this many passages (their vectors given).
    """

    factor: int = 10
    max_rows: int = 20_000

    def __post_init__(self) -> None:
        # plain ints: a numpy integer's product would wrap around in tier()
        object.__setattr__(self, "factor", check_positive_int(self.factor, "factor"))
        object.__setattr__(self, "max_rows", check_positive_int(self.max_rows, "max_rows"))
        if self.factor < 2:
            raise ValueError(f"factor must be at least 2, got {self.factor}")

    def tier(self, rows: int) -> int:
        """The tier of a segment of ``rows`` live passages (0 for fewer than ``factor``)."""
        tier, bound = 0, self.factor
        while rows >= bound:
            tier, bound = tier + 1, bound * self.factor
        return tier

    def merge_from(self, live: Sequence[int], pending: int) -> int | None:
        """The first of the segments (given by their live passages, in index order) that a
        write of ``pending`` passages merges with its own, or ``None`` to append it alone.

        For the largest tier ``t`` whose trailing run (the pending segment and the segments
        before it of tier ``t`` or smaller, never the first segment) holds ``factor``
        segments of tier ``t`` and at most ``max_rows`` passages in all: that run's start."""
        sizes = [*live, pending]
        tiers = [self.tier(size) for size in sizes]
        chosen = None
        for tier in range(self.tier(self.max_rows) + 1):
            start = len(sizes)
            while start > 1 and tiers[start - 1] <= tier:
                start -= 1
            run = range(start, len(sizes))
            if sum(tiers[i] == tier for i in run) >= self.factor:
                if sum(sizes[i] for i in run) > self.max_rows:
                    break
                chosen = start
        return chosen


def merge_policy(factor: int) -> MergePolicy | None:
    """The policy of a plain setting (a CLI flag, a framework component's argument):
    ``MergePolicy(factor=factor)``, or ``None`` (never merge) for 0.

    >>> merge_policy(0) is None, merge_policy(4).factor
    (True, 4)
    """
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 0:
        raise ValueError(f"merge_factor must be 0 (never merge) or at least 2, got {factor!r}")
    return MergePolicy(factor=factor) if factor else None
