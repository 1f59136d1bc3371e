"""BridgeRAG served from a persisted, reopened index: the same rankings as the in-memory
method over the same passages, after writes too; its judge reads vectors from the index."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag_multihop import Passage, Query
from rag_multihop.bridge import BridgeRetriever
from rag_multihop.corpus import Corpus
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.store import CorpusIndex, bridge_retriever
from rag_multihop.store.methods import index_vectors
from rag_multihop.vectors import PassageVectors
from tests.store.slices import wiki_slice

SIZE = 160
QUESTIONS = 8


@pytest.fixture(scope="module")
def embedded(shared_datasets, minilm):
    """A 2Wiki slice, its MiniLM vectors by id, and the questions as queries."""
    passages, questions = wiki_slice(shared_datasets, SIZE, QUESTIONS)
    vectors = minilm.encode([p.embedding_text for p in passages])
    by_id = {p.id: v for p, v in zip(passages, vectors, strict=True)}
    return passages, by_id, [Query(q) for q in questions]


def _in_memory(passages: list[Passage], by_id, encoder) -> BridgeRetriever:
    """The benchmark's LLM-free ``bridge`` over the passages held in memory."""
    ids = [p.id for p in passages]
    vectors = np.stack([by_id[i] for i in ids])
    dense = DenseRetriever(Corpus(passages), DenseIndex.build(ids, vectors), encoder)
    return BridgeRetriever.llm_free(
        dense, vectors=PassageVectors(encoder, ids=ids, vectors=vectors)
    )


def _rankings(retriever, queries) -> list[list[tuple[str, float]]]:
    return [[(c.id, round(c.score, 9)) for c in retriever.retrieve(q, k=10)] for q in queries]


def test_bridge_from_a_reopened_index_ranks_like_the_in_memory_method_before_and_after_writes(
    tmp_path, embedded, minilm
) -> None:
    passages, by_id, queries = embedded
    path = tmp_path / "idx"
    CorpusIndex.build(path, passages, np.stack([by_id[p.id] for p in passages]), encoder=minilm)
    served = bridge_retriever(CorpusIndex(path).snapshot(), encoder=minilm)
    expected = _rankings(_in_memory(passages, by_id, minilm), queries)
    assert _rankings(served, queries) == expected
    assert any(len({i for i, _ in r}) == 10 for r in expected)  # real rankings, not empty

    # delete 10%, add half of them back (new rows): ranks like a fresh in-memory build
    index = CorpusIndex(path)
    gone = random.Random(3).sample([p.id for p in passages], SIZE // 10)
    index.delete(gone)
    back = [p for p in passages if p.id in set(gone[: len(gone) // 2])]
    index.add(back, np.stack([by_id[p.id] for p in back]))
    live = [p for p in passages if p.id not in set(gone)] + back
    snapshot = CorpusIndex(path).snapshot()
    assert snapshot.corpus.ids == [p.id for p in live]
    expected = _rankings(_in_memory(live, by_id, minilm), queries)
    assert _rankings(bridge_retriever(snapshot, encoder=minilm), queries) == expected


def test_bridge_takes_its_candidates_from_the_users_store(tmp_path, embedded, minilm) -> None:
    """``first_stage``: hop 1 and the generated queries go to the user's retriever; passages
    the index lacks are skipped, as for the other methods."""
    passages, by_id, queries = embedded
    path = tmp_path / "idx"
    CorpusIndex.build(path, passages, np.stack([by_id[p.id] for p in passages]), encoder=minilm)
    snapshot = CorpusIndex(path).snapshot()
    store = _in_memory(passages, by_id, minilm).searcher  # the "user's store": its own FAISS
    via_store = bridge_retriever(snapshot, encoder=minilm, first_stage=store)
    assert _rankings(via_store, queries) == _rankings(
        bridge_retriever(snapshot, encoder=minilm), queries
    )


def test_bridge_refuses_another_model_and_checks_its_overrides(tmp_path, embedded, minilm) -> None:
    passages, by_id, _ = embedded
    path = tmp_path / "idx"
    vectors = np.stack([by_id[p.id] for p in passages])
    index = CorpusIndex.build(path, passages, vectors, encoder=minilm)

    class Other:
        name, dim = "other", 384

        def encode(self, texts, *, show_progress=False):
            return np.ones((len(texts), 384), dtype=np.float32)

    with pytest.raises(ValueError, match="not the model the index"):
        bridge_retriever(index.snapshot(), encoder=Other())
    with pytest.raises(ValueError, match="alpha"):
        bridge_retriever(index.snapshot(), encoder=minilm, alpha=-1.0)


def test_index_vectors_read_live_rows_and_refuse_what_the_index_lacks(tmp_path) -> None:
    passages = [Passage(f"p{i}", f"text {i}", f"T{i}") for i in range(4)]
    vectors = np.eye(4, dtype=np.float32)
    index = CorpusIndex.build(tmp_path / "idx", passages, vectors)
    index.delete(["p1"])
    found = index_vectors(index.snapshot())
    assert found.stores("p2") and not found.stores("p1")
    assert found.passages([passages[3], passages[0]]).tolist() == [
        [0.0, 0.0, 0.0, 1.0],
        [1.0, 0.0, 0.0, 0.0],
    ]
    given = found.passages([passages[1]], given={"p1": [0.0, 3.0, 0.0, 0.0]})
    assert given.tolist() == [[0.0, 1.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match=r"not stored in the index .*\['p1'\]"):
        found.passages([passages[1]])
