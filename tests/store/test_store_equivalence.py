"""Methods built from a persisted, incrementally updated index rank exactly like a fresh
in-memory build over the same passages (a 300-passage slice of the 2Wiki corpus, titled
and untitled: opaque ids as titles, the passages known by the subjects read from their
text)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.eval.views import opaque_name
from rag_multihop.fusion.core import FusionSettings
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.build import build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.links import stems
from rag_multihop.multihop.titles import title_tokens
from rag_multihop.store import CorpusIndex, IndexSettings, graph_fusion_retriever
from tests.store.slices import wiki_slice

SIZE = 300


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets):
    """300 passages (the gold of the first questions, then others) and 40 questions."""
    return wiki_slice(shared_datasets, SIZE, 40)


def _fresh_multihop(passages, vectors, encoder, *, subjects=True, ppr=None) -> MultiHopRetriever:
    corpus = Corpus(passages)
    return MultiHopRetriever(
        corpus,
        vectors,
        index=DenseIndex.build(corpus.ids, vectors),
        encoder=encoder,
        subjects=subjects,
        ppr=ppr,
    )


def _fresh_fusion(passages, vectors, encoder) -> FusionRetriever:
    corpus = Corpus(passages)
    dense = DenseRetriever(corpus, DenseIndex.build(corpus.ids, vectors), encoder)
    graph = GraphRetriever(
        build_entity_graph(corpus), corpus, seed_retriever=dense, settings=GraphSettings()
    )
    settings = FusionSettings(
        child_k=50, calibration="pit", fusion="boltzmann", pool_cap={"graph": 10}
    )
    return FusionRetriever({"dense": dense, "graph": graph}, settings=settings)


def _rankings(retriever, questions, encoder, k=10):
    out = []
    for text in questions:
        query = Query(text, embedding=encoder.encode([text])[0])
        out.append([(c.id, round(c.score, 9)) for c in retriever.retrieve(query, k=k)])
    return out


def _assert_same(snapshot, live_passages, vectors_by_id, encoder, questions) -> None:
    assert snapshot.corpus.ids == [p.id for p in live_passages]
    vectors = np.stack([vectors_by_id[p.id] for p in live_passages])
    subjects = snapshot.settings.subjects
    fresh = _fresh_multihop(live_passages, vectors, encoder, subjects=subjects)
    stored = MultiHopRetriever.from_index(snapshot, encoder=encoder, subjects=subjects)
    fresh_links = fresh.links
    assert stored._read_subjects == fresh._read_subjects
    assert (stored.links.weights != fresh_links.weights).nnz == 0
    assert np.array_equal(stored.links.specificity, fresh_links.specificity)
    assert dict(stored.links.contexts) == dict(fresh_links.contexts)
    for text in questions:  # the stored contexts' overlaps skip sources they rule out
        question = stems([token for _, token in title_tokens(text)])
        for source in range(0, len(live_passages), 7):
            targets = list(fresh_links.targets(source))
            assert np.array_equal(
                stored.links.context_overlaps(source, targets, question),
                fresh_links.context_overlaps(source, targets, question),
            )
    graph = build_entity_graph(Corpus(live_passages))
    stored_graph = snapshot.entity_graph
    assert tuple(stored_graph.entity_names) == graph.entity_names
    assert tuple(stored_graph.passage_ids) == graph.passage_ids
    for number in (0, len(graph.entity_names) // 2, len(graph.entity_names) - 1):
        name = graph.entity_names[number]
        assert stored_graph.entity_index[name] == number
    assert "no such entity" not in stored_graph.entity_index
    assert all(stored_graph.passage_index[pid] == i for i, pid in enumerate(graph.passage_ids))
    assert (stored_graph.mentions != graph.mentions).nnz == 0
    assert (stored_graph.title_links != graph.title_links).nnz == 0
    assert (stored_graph.passages_of != graph.passages_of).nnz == 0
    assert np.array_equal(stored_graph.entity_frequency, graph.entity_frequency)
    # the walk stored at commit is the one a fresh build makes, bit for bit
    walk, fresh_walk = stored_graph.push_walk(), graph.push_walk()
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(walk.forward, name), getattr(fresh_walk.forward, name))
    assert np.array_equal(walk.dangling, fresh_walk.dangling)
    assert np.array_equal(walk.degree_floor, fresh_walk.degree_floor)
    assert _rankings(stored, questions, encoder) == _rankings(fresh, questions, encoder)
    pushed = MultiHopRetriever.from_index(snapshot, encoder=encoder, subjects=subjects, ppr="push")
    fresh_pushed = _fresh_multihop(live_passages, vectors, encoder, subjects=subjects, ppr="push")
    assert _rankings(pushed, questions[:20], encoder) == _rankings(
        fresh_pushed, questions[:20], encoder
    )
    assert _rankings(graph_fusion_retriever(snapshot, encoder=encoder), questions, encoder) == (
        _rankings(_fresh_fusion(live_passages, vectors, encoder), questions, encoder)
    )


def _vectors_by_id(passages, encoder) -> dict[str, np.ndarray]:
    """Each passage's vector, by id (``title + "\\n" + text`` embedded, plus a little noise:
    the hashing encoder gives passages exactly equal cosines, which FAISS and the segmented
    search order differently; a real encoder's are continuous)."""
    raw = encoder.encode([p.embedding_text for p in passages])
    raw = raw + np.random.default_rng(0).normal(0, 1e-3, raw.shape).astype(np.float32)
    return {p.id: v for p, v in zip(passages, raw, strict=True)}


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
    _assert_same(snapshot, live, vectors_by_id, encoder, questions)

    index.compact()
    compacted = index.snapshot()
    assert len(compacted.segments.segments) == 1 and compacted.n_live == len(live)
    _assert_same(compacted, live, vectors_by_id, encoder, questions)


def test_an_untitled_index_knows_its_passages_by_their_subjects(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    untitled = _untitled(passages)
    vectors = _vectors_by_id(untitled, hashing_encoder)
    _build_update_compact(tmp_path / "idx", untitled, vectors, questions, hashing_encoder)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    # the subjects carry the structure: without them opaque titles link nothing
    assert len(snapshot.subject_rows) > snapshot.n_live // 2
    assert snapshot.link_graph.n_links > 20
    # ... and the ranking: a title-only dictionary (as before the names were stored) differs
    live = list(snapshot.corpus)
    matrix = np.stack([vectors[p.id] for p in live])
    titles_only = _fresh_multihop(live, matrix, hashing_encoder, subjects=False)
    stored = MultiHopRetriever.from_index(snapshot, encoder=hashing_encoder)
    assert _rankings(stored, questions, hashing_encoder) != _rankings(
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
    vectors = _vectors_by_id(untitled, hashing_encoder)
    _build_update_compact(tmp_path / "idx", untitled, vectors, questions, hashing_encoder, settings)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    assert snapshot.subject_rows == frozenset() and snapshot.link_graph.n_links == 0
    with pytest.raises(ValueError, match=r"pass subjects=False, or rebuild the index"):
        MultiHopRetriever.from_index(snapshot)


def test_add_delete_and_compact_rank_like_a_fresh_build(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    vectors = _vectors_by_id(passages, hashing_encoder)
    _build_update_compact(tmp_path / "idx", passages, vectors, questions, hashing_encoder)
