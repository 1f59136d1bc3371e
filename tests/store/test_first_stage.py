"""Dense candidates from the user's store: the same candidates rank the same, stale ids skip."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Candidate, Corpus, Passage, Query
from rag_multihop.index.ann import AUTO_FLAT_LIMIT, check_ann, make_ann_index, resolve_ann
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.index.first_stage import StoreFirstStage
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from tests.store.slices import wiki_slice

SIZE = 200


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets):
    """200 passages (the gold of the first questions, then others) and 25 questions."""
    return wiki_slice(shared_datasets, SIZE, 25)


class UserStore:
    """The user's vector store: its own FAISS index over the same vectors, reporting
    distances (not cosines) and, optionally, ids the corpus index has not seen."""

    def __init__(self, passages, vectors, stale: tuple[str, ...] = ()) -> None:
        self.corpus = Corpus(passages)
        self.dense = DenseRetriever(self.corpus, DenseIndex.build(self.corpus.ids, vectors))
        self.stale = stale
        self.calls = 0

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        self.calls += 1
        found = self.dense.retrieve(query, k=k)
        ghosts = [Candidate(Passage(pid, "deleted since"), 0.0) for pid in self.stale]
        return ghosts + [Candidate(c.passage, 1.0 - c.score) for c in found]


class _Fixed:
    """A store that returns the same passages whatever the query."""

    def __init__(self, passages) -> None:
        self.passages = passages

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return [Candidate(p, 0.0) for p in self.passages[:k]]


def _rankings(retriever, questions, encoder, k=10):
    out = []
    for text in questions:
        query = Query(text, embedding=encoder.encode([text])[0])
        out.append([(c.id, round(c.score, 5)) for c in retriever.retrieve(query, k=k)])
    return out


def _vectors(passages, encoder) -> np.ndarray:
    raw = encoder.encode([p.embedding_text for p in passages])
    return raw + np.random.default_rng(0).normal(0, 1e-3, raw.shape).astype(np.float32)


def test_multihop_ranks_the_same_from_the_users_store(slice_2wiki, hashing_encoder) -> None:
    passages, questions = slice_2wiki
    vectors = _vectors(passages, hashing_encoder)
    corpus = Corpus(passages)
    embedded = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder)
    store = UserStore(passages, vectors, stale=("ghost-1", "ghost-2"))
    external = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder, first_stage=store)
    assert external.index is None  # no FAISS index of ours beside the user's store
    expected = _rankings(embedded, questions, hashing_encoder)
    assert _rankings(external, questions, hashing_encoder) == expected
    assert store.calls == len(questions)
    query = Query(questions[0], embedding=hashing_encoder.encode([questions[0]])[0])
    result = external.run(query, k=5)
    assert result.trace.stale_candidates == 2
    assert result.trace.to_dict()["stale_candidates"] == 2
    # candidates already retrieved (a pipeline's embedding retriever) work the same way
    given = embedded.run(query, k=5, candidates=store.retrieve(query, k=50))
    assert [c.id for c in given.candidates] == [c.id for c in result.candidates]
    assert embedded.run(query, k=5).trace.stale_candidates == 0


def test_graph_fusion_ranks_the_same_from_the_users_store(
    slice_2wiki, hashing_encoder, tmp_path
) -> None:
    passages, questions = slice_2wiki
    vectors = _vectors(passages, hashing_encoder)
    index = CorpusIndex.build(tmp_path / "idx", passages, vectors)
    snapshot = index.snapshot()
    store = UserStore(passages, snapshot.vectors, stale=("ghost",))
    embedded = graph_fusion_retriever(snapshot, encoder=hashing_encoder)
    external = graph_fusion_retriever(snapshot, encoder=hashing_encoder, first_stage=store)
    assert _rankings(external, questions, hashing_encoder) == _rankings(
        embedded, questions, hashing_encoder
    )
    dense = external.retrievers["dense"]
    assert isinstance(dense, StoreFirstStage) and dense.stale >= len(questions)
    assert dense.vectors is snapshot.vectors  # read at the candidates' rows: no copy


def test_the_store_first_stage_reads_only_the_candidates_vectors(hashing_encoder) -> None:
    passages = [Passage(i, f"{i} text", i.title()) for i in ("a", "b", "c")]
    vectors = np.array([[3.0, 4.0], [1.0, 0.0], [np.nan, 0.0]], dtype=np.float32)
    first = StoreFirstStage(_Fixed(passages[:2]), Corpus(passages), vectors)
    found = first.retrieve(Query("q", embedding=np.array([1.0, 0.0])), k=2)
    assert [(c.id, round(c.score, 6)) for c in found] == [("b", 1.0), ("a", 0.6)]
    assert np.array_equal(vectors[0], [3.0, 4.0])  # the caller's array is not normalised
    broken = StoreFirstStage(_Fixed(passages), Corpus(passages), vectors)
    with pytest.raises(ValueError, match=r"passage vectors contain NaN .*ids \['c'\]"):
        broken.retrieve(Query("q", embedding=np.array([1.0, 0.0])), k=3)


def test_a_store_that_knows_nothing_of_the_corpus_gives_no_dense_candidates(
    hashing_encoder,
) -> None:
    passages = [Passage("a", "Rope is a film.", "Rope"), Passage("b", "Psycho.", "Psycho")]
    vectors = hashing_encoder.encode([p.embedding_text for p in passages])
    stranger = UserStore([Passage("x", "other"), Passage("y", "else")], vectors)
    retriever = MultiHopRetriever(Corpus(passages), vectors, first_stage=stranger)
    result = retriever.run(Query("Who directed Rope?", embedding=vectors[0]), k=2)
    assert result.trace.stale_candidates == 2
    assert [c.id for c in result.candidates][:1] == ["a"]  # named by title, not by the store
    with pytest.raises(TypeError, match="first_stage must be a retriever"):
        MultiHopRetriever(Corpus(passages), vectors, first_stage="chroma")
    with pytest.raises(TypeError, match="store must be a retriever"):
        StoreFirstStage(object(), Corpus(passages), vectors)  # type: ignore[arg-type]


def test_the_embedded_ann_is_a_setting(hashing_encoder) -> None:
    assert resolve_ann("auto", AUTO_FLAT_LIMIT - 1) == "Flat"
    assert resolve_ann("auto", AUTO_FLAT_LIMIT) == "HNSW32"
    passages = [Passage(f"p{i}", f"passage number {i} about topic {i % 7}") for i in range(300)]
    vectors = hashing_encoder.encode([p.embedding_text for p in passages])
    corpus = Corpus(passages)
    flat = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder)
    hnsw = MultiHopRetriever(corpus, vectors, encoder=hashing_encoder, ann="HNSW16", ef_search=300)
    assert flat.index is not None and flat.index.factory == "Flat"
    assert hnsw.index is not None and hnsw.index.factory == "HNSW16"
    assert hnsw.index._index.hnsw.efSearch == 300
    query = Query("passage number 12 about topic 5")
    assert [c.id for c in hnsw.retrieve(query, k=5)] == [c.id for c in flat.retrieve(query, k=5)]
    with pytest.raises(ValueError, match="ann 'HNSW-32' is not 'auto', 'flat' or a FAISS"):
        MultiHopRetriever(corpus, vectors, ann="HNSW-32")
    with pytest.raises(ValueError, match="ef_search must be"):
        MultiHopRetriever(corpus, vectors, ef_search=0)
    with pytest.raises(ValueError, match="ann must be 'auto'"):
        check_ann("")
    assert make_ann_index(np.eye(4, dtype="float32"), "flat").ntotal == 4
