"""What the store's equivalence tests compare: methods opened from a persisted index
against a fresh in-memory build over the same live passages, structure by structure and
ranking by ranking."""

from __future__ import annotations

import numpy as np

from rag_multihop import Corpus, Query
from rag_multihop.fusion.core import FusionSettings
from rag_multihop.fusion.retriever import FusionRetriever
from rag_multihop.graph.build import build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.links import stems
from rag_multihop.multihop.titles import title_tokens
from rag_multihop.store import graph_fusion_retriever


def fresh_multihop(passages, vectors, encoder, *, subjects=True, ppr=None) -> MultiHopRetriever:
    corpus = Corpus(passages)
    return MultiHopRetriever(
        corpus,
        vectors,
        index=DenseIndex.build(corpus.ids, vectors),
        encoder=encoder,
        subjects=subjects,
        ppr=ppr,
    )


def fresh_fusion(passages, vectors, encoder) -> FusionRetriever:
    corpus = Corpus(passages)
    dense = DenseRetriever(corpus, DenseIndex.build(corpus.ids, vectors), encoder)
    graph = GraphRetriever(
        build_entity_graph(corpus), corpus, seed_retriever=dense, settings=GraphSettings()
    )
    settings = FusionSettings(
        child_k=50, calibration="pit", fusion="boltzmann", pool_cap={"graph": 10}
    )
    return FusionRetriever({"dense": dense, "graph": graph}, settings=settings)


def rankings(retriever, questions, encoder, k=10):
    out = []
    for text in questions:
        query = Query(text, embedding=encoder.encode([text])[0])
        out.append([(c.id, round(c.score, 9)) for c in retriever.retrieve(query, k=k)])
    return out


def assert_same(snapshot, live_passages, vectors_by_id, encoder, questions) -> None:
    assert snapshot.corpus.ids == [p.id for p in live_passages]
    vectors = np.stack([vectors_by_id[p.id] for p in live_passages])
    subjects = snapshot.settings.subjects
    fresh = fresh_multihop(live_passages, vectors, encoder, subjects=subjects)
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
    assert rankings(stored, questions, encoder) == rankings(fresh, questions, encoder)
    pushed = MultiHopRetriever.from_index(snapshot, encoder=encoder, subjects=subjects, ppr="push")
    fresh_pushed = fresh_multihop(live_passages, vectors, encoder, subjects=subjects, ppr="push")
    assert rankings(pushed, questions[:20], encoder) == rankings(
        fresh_pushed, questions[:20], encoder
    )
    assert rankings(graph_fusion_retriever(snapshot, encoder=encoder), questions, encoder) == (
        rankings(fresh_fusion(live_passages, vectors, encoder), questions, encoder)
    )


def noisy_vectors(passages, encoder) -> dict[str, np.ndarray]:
    """Each passage's vector, by id (``title + "\\n" + text`` embedded, plus a little noise:
    the hashing encoder gives passages exactly equal cosines, which FAISS and the segmented
    search order differently; a real encoder's are continuous)."""
    raw = encoder.encode([p.embedding_text for p in passages])
    raw = raw + np.random.default_rng(0).normal(0, 1e-3, raw.shape).astype(np.float32)
    return {p.id: v for p, v in zip(passages, raw, strict=True)}
