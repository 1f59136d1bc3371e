"""Methods built from a persisted, incrementally updated index rank exactly like a fresh
in-memory build over the same passages (a 300-passage slice of the 2Wiki corpus)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.eval.datasets import load_named
from rag_multihop.fusion.core import FusionSettings
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.build import build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.multihop import LinkGraph, MultiHopRetriever, TitleIndex
from rag_multihop.store import CorpusIndex, graph_fusion_retriever

SIZE = 300


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets):
    """300 passages (the gold of the first questions, then others) and 40 questions."""
    dataset = load_named("2wiki", shared_datasets)
    questions = dataset.questions[:40]
    gold = [pid for q in questions for pid in q.gold_ids]
    rest = [p.id for p in dataset.corpus if p.id not in set(gold)]
    ids = list(dict.fromkeys(gold))
    ids += random.Random(0).sample(rest, SIZE - len(ids))
    passages = [dataset.corpus[pid] for pid in ids]
    passages = [Passage(p.id, p.text, p.title) for p in passages]
    return passages, [q.question for q in questions]


def _fresh_multihop(passages, vectors, encoder) -> MultiHopRetriever:
    corpus = Corpus(passages)
    return MultiHopRetriever(
        corpus, vectors, index=DenseIndex.build(corpus.ids, vectors), encoder=encoder
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
    fresh = _fresh_multihop(live_passages, vectors, encoder)
    stored = MultiHopRetriever.from_index(snapshot, encoder=encoder)
    fresh_links = LinkGraph.build(
        Corpus(live_passages), TitleIndex([p.title for p in live_passages])
    )
    assert (stored.links.weights != fresh_links.weights).nnz == 0
    assert np.array_equal(stored.links.specificity, fresh_links.specificity)
    assert dict(stored.links.contexts) == dict(fresh_links.contexts)
    graph = build_entity_graph(Corpus(live_passages))
    stored_graph = snapshot.entity_graph
    assert stored_graph.entity_names == graph.entity_names
    assert (stored_graph.mentions != graph.mentions).nnz == 0
    assert (stored_graph.title_links != graph.title_links).nnz == 0
    assert _rankings(stored, questions, encoder) == _rankings(fresh, questions, encoder)
    assert _rankings(graph_fusion_retriever(snapshot, encoder=encoder), questions, encoder) == (
        _rankings(_fresh_fusion(live_passages, vectors, encoder), questions, encoder)
    )


def test_add_delete_and_compact_rank_like_a_fresh_build(
    tmp_path, slice_2wiki, hashing_encoder
) -> None:
    passages, questions = slice_2wiki
    encoder = hashing_encoder
    raw = encoder.encode([p.embedding_text for p in passages])
    vectors_by_id = {p.id: v for p, v in zip(passages, raw, strict=True)}
    rng = random.Random(1)
    late = set(rng.sample([p.id for p in passages], SIZE // 10))
    first = [p for p in passages if p.id not in late]
    index = CorpusIndex.build(
        tmp_path / "idx", first, np.stack([vectors_by_id[p.id] for p in first])
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
