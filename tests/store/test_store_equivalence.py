"""Methods built from a persisted, incrementally updated index rank exactly like a fresh
in-memory build over the same passages (a 300-passage slice of the 2Wiki corpus, titled
and untitled: opaque ids as titles, the passages known by the subjects read from their
text)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.eval.views import opaque_name
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, IndexSettings
from tests.store.equivalence import assert_same, fresh_multihop, noisy_vectors, rankings
from tests.store.slices import wiki_slice

SIZE = 300


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets):
    """300 passages (the gold of the first questions, then others) and 40 questions."""
    return wiki_slice(shared_datasets, SIZE, 40)


def _untitled(passages):
    """The passages with opaque ids as titles (``doc-<hash>``: no word of it in the text)."""
    return [Passage(p.id, p.text, opaque_name(p.title, 0)) for p in passages]


def _build_update_compact(path, passages, vectors_by_id, questions, encoder, settings=None):
    """Build from 90% of ``passages``, add the rest, delete 10%, compact: after each write
    the index's methods rank like a fresh build over its live passages."""
    rng = random.Random(1)
    late = set(rng.sample([p.id for p in passages], SIZE // 10))
    first = [p for p in passages if p.id not in late]
    index = CorpusIndex.build(
        path, first, np.stack([vectors_by_id[p.id] for p in first]), settings=settings
    )
    added = [p for p in passages if p.id in late]
    index.add(added, np.stack([vectors_by_id[p.id] for p in added]))
    doomed = set(rng.sample([p.id for p in passages], SIZE // 10))
    index.delete(sorted(doomed))
    live = [p for p in first + added if p.id not in doomed]
    snapshot = index.snapshot()
    assert len(snapshot.segments.segments) == 3
    assert_same(snapshot, live, vectors_by_id, encoder, questions)

    index.compact()
    compacted = index.snapshot()
    assert len(compacted.segments.segments) == 1 and compacted.n_live == len(live)
    assert_same(compacted, live, vectors_by_id, encoder, questions)


def test_an_untitled_index_knows_its_passages_by_their_subjects(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    untitled = _untitled(passages)
    vectors = noisy_vectors(untitled, hashing_encoder)
    _build_update_compact(tmp_path / "idx", untitled, vectors, questions, hashing_encoder)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    # the subjects carry the structure: without them opaque titles link nothing
    assert len(snapshot.subject_rows) > snapshot.n_live // 2
    assert snapshot.link_graph.n_links > 20
    # ... and the ranking: a title-only dictionary (as before the names were stored) differs
    live = list(snapshot.corpus)
    matrix = np.stack([vectors[p.id] for p in live])
    titles_only = fresh_multihop(live, matrix, hashing_encoder, subjects=False)
    stored = MultiHopRetriever.from_index(snapshot, encoder=hashing_encoder)
    assert rankings(stored, questions, hashing_encoder) != rankings(
        titles_only, questions, hashing_encoder
    )
    with pytest.raises(ValueError, match=r"subjects=False differs from the index's subjects=True"):
        MultiHopRetriever.from_index(snapshot, subjects=False)


def test_an_index_without_subjects_ranks_like_a_build_without_them(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    settings = IndexSettings(subjects=False)
    untitled = _untitled(passages)
    vectors = noisy_vectors(untitled, hashing_encoder)
    _build_update_compact(tmp_path / "idx", untitled, vectors, questions, hashing_encoder, settings)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    assert snapshot.subject_rows == frozenset() and snapshot.link_graph.n_links == 0
    with pytest.raises(ValueError, match=r"pass subjects=False, or rebuild the index"):
        MultiHopRetriever.from_index(snapshot)


def test_add_delete_and_compact_rank_like_a_fresh_build(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    vectors = noisy_vectors(passages, hashing_encoder)
    _build_update_compact(tmp_path / "idx", passages, vectors, questions, hashing_encoder)
