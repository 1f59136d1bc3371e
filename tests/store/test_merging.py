"""Size-tiered merging: an index fed by many small writes keeps few segments, ranks like a
fresh build at every step, and readers of an older version keep reading it."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, MergePolicy
from rag_multihop.store.segment import SEGMENTS
from tests.store.equivalence import assert_same, noisy_vectors, rankings
from tests.store.slices import wiki_slice

SIZE = 240


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets):
    return wiki_slice(shared_datasets, SIZE, 30)


class Feed:
    """Small writes (adds, deletes, upserts of changed text) to an index, with the live
    passages a fresh build of the same state holds, in index order."""

    def __init__(self, index: CorpusIndex, first: list[Passage], vectors: dict, seed: int):
        self.index, self.live, self.vectors = index, list(first), vectors
        self.rng = random.Random(seed)

    def add(self, passages: list[Passage]) -> None:
        self.index.add(passages, np.stack([self.vectors[p.id] for p in passages]))
        self.live += passages

    def delete(self, count: int) -> None:
        gone = set(self.rng.sample([p.id for p in self.live], count))
        self.index.delete(sorted(gone))
        self.live = [p for p in self.live if p.id not in gone]

    def upsert_changed(self) -> None:
        old = self.rng.choice(self.live)
        new = Passage(old.id, old.text + " It was later renamed.", old.title)
        self.vectors[new.id] = self.vectors[old.id][::-1].copy()
        self.index.upsert([new], self.vectors[new.id][None, :])
        self.live = [p for p in self.live if p.id != old.id] + [new]


def _fed(path, passages, vectors, policy, *, writes: int, seed: int = 3) -> Feed:
    """A build of the first 60% of ``passages``, then ``writes`` small writes."""
    first, rest = passages[: int(SIZE * 0.6)], passages[int(SIZE * 0.6) :]
    index = CorpusIndex.build(path, first, np.stack([vectors[p.id] for p in first]), merge=policy)
    feed = Feed(index, first, vectors, seed)
    for k in range(writes):
        if k % 4 == 3:
            feed.delete(feed.rng.randint(1, 3))
        elif k % 7 == 5:
            feed.upsert_changed()
        else:
            size = feed.rng.randint(1, 6)
            feed.add(rest[:size])
            rest = rest[size:]
    return feed


def test_policy_tiers_and_arguments(tmp_path) -> None:
    policy = MergePolicy(factor=10, max_rows=1000)
    assert [policy.tier(n) for n in (0, 9, 10, 99, 100, 5000)] == [0, 0, 1, 1, 2, 3]
    assert policy.merge_from([], 1) is None  # nothing to merge with
    assert policy.merge_from([1] * 9, 1) is None  # the first segment is never merged
    assert policy.merge_from([5] * 10, 1) == 1
    assert policy.merge_from([5, 500] + [1] * 9, 1) == 2  # 500 is not rewritten for them
    assert policy.merge_from([5] + [200] * 9, 200) is None  # 2,000 > max_rows
    for bad in (0, 1, -3, 2.5, float("nan")):
        with pytest.raises((TypeError, ValueError), match="factor"):
            MergePolicy(factor=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rows"):
        MergePolicy(max_rows=0)
    # numpy integers are taken as ints: their products would wrap around (a write hung)
    wide = MergePolicy(factor=np.int64(10), max_rows=np.iinfo(np.int64).max)
    assert type(wide.factor) is int and wide.tier(10**30) == 30
    assert wide.merge_from([5] * 10, 1) == 1
    with pytest.raises(TypeError, match="merge must be a MergePolicy or None"):
        CorpusIndex.create(tmp_path / "idx", dim=2, merge=3)  # type: ignore[arg-type]
    assert not (tmp_path / "idx").exists()


def test_small_writes_merge_and_rank_like_a_fresh_build(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    vectors = noisy_vectors(passages, hashing_encoder)
    policy = MergePolicy(factor=3, max_rows=200)
    feed = _fed(tmp_path / "idx", passages, vectors, policy, writes=30)
    snapshot = feed.index.snapshot()
    segments = len(snapshot.segments.segments)
    # 31 writes without merging; tiers of 3: a few per tier, the first segment aside
    assert segments <= 1 + 2 * (policy.tier(policy.max_rows) + 1)
    assert_same(snapshot, feed.live, feed.vectors, hashing_encoder, questions)
    on_disk = {p.name for p in (tmp_path / "idx" / SEGMENTS).iterdir() if p.name[0] == "s"}
    assert on_disk == {s.name for s in snapshot.segments.segments}  # merged ones removed

    plain = _fed(
        tmp_path / "plain", passages, noisy_vectors(passages, hashing_encoder), None, writes=30
    )
    assert len(plain.index.snapshot().segments.segments) == 31
    assert [p.id for p in plain.live] == [p.id for p in feed.live]


def test_a_reader_keeps_its_version_while_writes_merge_its_segments(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    vectors = noisy_vectors(passages, hashing_encoder)
    feed = _fed(tmp_path / "idx", passages, vectors, MergePolicy(factor=2), writes=6)
    held = feed.index.snapshot()
    live = list(feed.live)
    before = rankings(
        MultiHopRetriever.from_index(held, encoder=hashing_encoder), questions[:10], hashing_encoder
    )
    for _ in range(6):
        feed.delete(1)
    assert not {s.name for s in held.segments.segments} <= {
        p.name for p in (tmp_path / "idx" / SEGMENTS).iterdir()
    }  # the held version's segments were merged away on disk
    assert held.corpus.ids == [p.id for p in live]
    assert (
        rankings(
            MultiHopRetriever.from_index(held, encoder=hashing_encoder),
            questions[:10],
            hashing_encoder,
        )
        == before
    )
    assert math.isfinite(held.dense_index.search(vectors[live[0].id][None, :], 3)[0][0][0])
