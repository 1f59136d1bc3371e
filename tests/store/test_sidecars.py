"""AAR passage transforms and RaLa token states as sidecars of the persistent index: served
from a reopened index without recomputing, kept right by add / delete / upsert / compact
(rankings equal a fresh build's over the live passages), stale ones refused."""

from __future__ import annotations

import logging
import random

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query
from rag_multihop.association import AssociationReranker, TrainingConfig, corpus_pairs
from rag_multihop.association.indexed import AssociationSidecar
from rag_multihop.coop import HiddenStateEncoder, RaLaReranker
from rag_multihop.coop.indexed import RaLaSidecar, rala_from_index
from rag_multihop.corpus import Corpus
from rag_multihop.eval.datasets import load_named
from rag_multihop.store import CorpusIndex, MergePolicy
from tests.coop.models import perturbed_copy

SIZE = 200
RALA_SIZE = 60


@pytest.fixture(scope="module")
def wiki_slice(shared_datasets, minilm):
    """The gold passages of the first 2Wiki questions plus random others, their MiniLM
    vectors, and the questions' embedded queries."""
    dataset = load_named("2wiki", shared_datasets)
    questions = dataset.questions[:20]
    gold = list(dict.fromkeys(pid for q in questions for pid in q.gold_ids))
    rest = [p.id for p in dataset.corpus if p.id not in set(gold)]
    ids = gold + random.Random(0).sample(rest, SIZE - len(gold))
    passages = [Passage(p.id, p.text, p.title) for p in (dataset.corpus[i] for i in ids)]
    vectors = minilm.encode([p.embedding_text for p in passages])
    queries = [Query(q.question, embedding=minilm.encode([q.question])[0]) for q in questions]
    return passages, {p.id: v for p, v in zip(passages, vectors, strict=True)}, queries


def _model(passages, vectors_by_id, seed: int = 0) -> AssociationReranker:
    ids = [p.id for p in passages]
    pairs = corpus_pairs(Corpus(passages))
    training = TrainingConfig(epochs=3, batch_size=64, seed=seed)
    return AssociationReranker(training=training).fit(
        ids, np.stack([vectors_by_id[i] for i in ids]), pairs, encoder_name="minilm"
    )


def _pool(snapshot, query: Query, k: int = 30) -> list[Candidate]:
    """The index's dense top ``k`` as candidates (what AAR and RaLa rerank)."""
    scores, ids = snapshot.dense_index.search(np.asarray(query.embedding)[None, :], k)
    corpus = snapshot.corpus
    return [
        Candidate(corpus[pid], float(s), rank + 1, {"dense": float(s)})
        for rank, (pid, s) in enumerate(zip(ids[0], scores[0], strict=True))
    ]


def _ranking(reranker, snapshot, queries, k: int = 10) -> list[list[tuple[str, float]]]:
    out = []
    for query in queries:
        ranked = reranker.rerank(query, _pool(snapshot, query), top_n=k)
        out.append([(c.id, round(c.score, 5)) for c in ranked])
    return out


def _churn(index: CorpusIndex, passages, vectors_by_id, rng: random.Random):
    """Delete a random 10% and add back half of them (new rows); the live passages in index
    order."""
    gone = rng.sample([p.id for p in passages], len(passages) // 10)
    index.delete(gone)
    back = [p for p in passages if p.id in set(gone[: len(gone) // 2])]
    index.add(back, np.stack([vectors_by_id[p.id] for p in back]))
    live = [p for p in passages if p.id not in set(gone)] + back
    return live


def _fresh_index(tmp_path, name, passages, vectors_by_id, producer) -> CorpusIndex:
    index = CorpusIndex.build(
        tmp_path / name, passages, np.stack([vectors_by_id[p.id] for p in passages])
    )
    index.attach_sidecar(producer)
    return index


def test_aar_from_a_reopened_index_ranks_like_the_model_and_survives_add_delete_compact(
    tmp_path, wiki_slice
) -> None:
    passages, vectors_by_id, queries = wiki_slice
    model = _model(passages, vectors_by_id)
    index = CorpusIndex.build(
        tmp_path / "idx", passages, np.stack([vectors_by_id[p.id] for p in passages])
    )
    with pytest.raises(LookupError, match="holds no 'aar' sidecar.*attach_sidecar"):
        AssociationReranker.from_index(index.snapshot())
    index.attach_sidecar(AssociationSidecar.of(model))

    reopened = CorpusIndex(tmp_path / "idx").snapshot()
    served = AssociationReranker.from_index(reopened)
    assert _ranking(served, reopened, queries) == _ranking(model, reopened, queries)
    assert served.computed_at_query_time == 0  # every f(p) read from the sidecar
    assert model.with_index(reopened).is_fitted

    # writes through a handle given no producer: the index computes f(p) from its head
    live = _churn(CorpusIndex(tmp_path / "idx"), passages, vectors_by_id, random.Random(1))
    fresh = _fresh_index(tmp_path, "fresh", live, vectors_by_id, AssociationSidecar.of(model))
    for snapshot in (CorpusIndex(tmp_path / "idx").snapshot(), None):
        if snapshot is None:
            CorpusIndex(tmp_path / "idx").compact()
            snapshot = CorpusIndex(tmp_path / "idx").snapshot()
            assert len(snapshot.manifest["sidecars"]["aar"]["parts"]) == 1
        assert snapshot.corpus.ids == [p.id for p in live]
        served = AssociationReranker.from_index(snapshot)
        expected = _ranking(
            AssociationReranker.from_index(fresh.snapshot()), fresh.snapshot(), queries
        )
        assert _ranking(served, snapshot, queries) == expected
        assert served.computed_at_query_time == 0


def test_attaching_in_batches_over_several_segments_equals_one_batch(
    tmp_path, wiki_slice, monkeypatch
) -> None:
    """A corpus larger than one attach batch is written as several parts, and a churned
    index (three segments, tombstones) gathers its vectors from each: the served AAR
    ranks as an attach in one batch does."""
    import rag_multihop.store.index as index_module

    passages, vectors_by_id, queries = wiki_slice
    model = _model(passages, vectors_by_id)
    rankings = []
    for name, batch in (("one", len(passages)), ("many", 37)):
        monkeypatch.setattr(index_module, "ATTACH_BATCH", batch)
        index = CorpusIndex.build(
            tmp_path / name, passages, np.stack([vectors_by_id[p.id] for p in passages])
        )
        _churn(index, passages, vectors_by_id, random.Random(2))
        index.attach_sidecar(AssociationSidecar.of(model))
        snapshot = CorpusIndex(tmp_path / name).snapshot()
        parts = snapshot.manifest["sidecars"]["aar"]["parts"]
        assert len(parts) == -(-snapshot.n_live // batch)
        served = AssociationReranker.from_index(snapshot)
        rankings.append(_ranking(served, snapshot, queries))
        assert served.computed_at_query_time == 0
    assert rankings[0] == rankings[1]
    assert rankings[0] == _ranking(model, snapshot, queries)


def test_a_stale_aar_sidecar_is_refused_and_replaced_only_when_asked(tmp_path, wiki_slice) -> None:
    passages, vectors_by_id, _ = wiki_slice
    index = _fresh_index(
        tmp_path,
        "idx",
        passages,
        vectors_by_id,
        AssociationSidecar.of(_model(passages, vectors_by_id)),
    )
    other = _model(passages, vectors_by_id, seed=7)
    with pytest.raises(ValueError, match="holds AAR passage transforms of model .*replace=True"):
        other.with_index(index.snapshot())
    with pytest.raises(ValueError, match="'aar' sidecar .* was made by model=.*replace=True"):
        index.attach_sidecar(AssociationSidecar.of(other))
    index.attach_sidecar(AssociationSidecar.of(other), replace=True)
    assert other.with_index(index.snapshot()).is_fitted
    assert CorpusIndex(index.path).info()["sidecars"]["aar"]["rows"] == len(passages)


def _small_writes(index: CorpusIndex, passages, vectors_by_id, rng: random.Random) -> list:
    """Twelve one- or two-passage writes (deletes, and adds of passages deleted before);
    the live passages in index order."""
    live = list(passages)
    gone: list[Passage] = []
    for k in range(12):
        if k % 3 == 2 and gone:
            back, gone = gone[:2], gone[2:]
            index.add(back, np.stack([vectors_by_id[p.id] for p in back]))
            live += back
        else:
            doomed = rng.sample(live, 2)
            index.delete([p.id for p in doomed])
            live = [p for p in live if p not in doomed]
            gone += doomed
    return live


def test_aar_values_are_carried_through_merges_and_a_held_snapshot_keeps_its_own(
    tmp_path, wiki_slice
) -> None:
    passages, vectors_by_id, queries = wiki_slice
    model = _model(passages, vectors_by_id)
    _fresh_index(tmp_path, "idx", passages, vectors_by_id, AssociationSidecar.of(model))
    held = CorpusIndex(tmp_path / "idx").snapshot()
    expected_held = _ranking(AssociationReranker.from_index(held), held, queries)

    writer = CorpusIndex(tmp_path / "idx", merge=MergePolicy(factor=2))
    live = _small_writes(writer, passages, vectors_by_id, random.Random(4))
    snapshot = writer.snapshot()
    assert len(snapshot.segments.segments) < 6  # 13 without merging
    parts = snapshot.manifest["sidecars"]["aar"]["parts"]
    assert writer.info()["sidecars"]["aar"]["rows"] <= len(live) + 24
    fresh = _fresh_index(tmp_path, "fresh", live, vectors_by_id, AssociationSidecar.of(model))
    served = AssociationReranker.from_index(snapshot)
    assert _ranking(served, snapshot, queries) == _ranking(
        AssociationReranker.from_index(fresh.snapshot()), fresh.snapshot(), queries
    )
    assert served.computed_at_query_time == 0 and len(parts) < 6

    # the held version's sidecar parts were removed from disk by the merges and a
    # compaction: it still serves the values it was opened with
    writer.compact()
    from_held = AssociationReranker.from_index(held)
    assert _ranking(from_held, held, queries) == expected_held
    assert from_held.computed_at_query_time == 0


@pytest.fixture(scope="module")
def rala(minilm) -> RaLaReranker:
    return RaLaReranker(HiddenStateEncoder(minilm), candidates=30)


def test_rala_from_a_reopened_index_and_after_add_delete_compact(
    tmp_path, wiki_slice, rala, caplog
) -> None:
    passages, vectors_by_id, queries = wiki_slice
    passages, queries = passages[:RALA_SIZE], queries[:5]
    states = rala.build_store(passages)
    producer = RaLaSidecar(rala, states=states)  # precomputed states, not encoded again
    _fresh_index(tmp_path, "idx", passages, vectors_by_id, producer)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    served = rala_from_index(snapshot, rala.encoder, candidates=30)
    expected = _ranking(RaLaReranker(rala.encoder, store=states, candidates=30), snapshot, queries)
    assert _ranking(served, snapshot, queries) == expected
    assert served.encoded_at_query_time == 0

    # a writer without the RaLa producer leaves its new rows uncovered (encoded on demand)
    with caplog.at_level(logging.WARNING):
        live = _churn(CorpusIndex(tmp_path / "idx"), passages, vectors_by_id, random.Random(2))
    assert "no producer" in caplog.text
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    served = rala_from_index(snapshot, rala.encoder, candidates=30)
    added = [p.id for p in live[len(live) - len(passages) // 20 :]]
    assert served.store.get(added) == [None] * len(added)
    assert all(s is not None for s in served.store.get([p.id for p in live[: -len(added)]]))
    fresh_states = rala.build_store(live)
    reference = RaLaReranker(rala.encoder, store=fresh_states, candidates=30)
    expected = _ranking(reference, snapshot, queries)
    # attaching again fills in exactly the uncovered rows; compaction carries them
    writer = CorpusIndex(tmp_path / "idx")
    writer.attach_sidecar(RaLaSidecar(rala, states=fresh_states))
    assert writer.info()["sidecars"]["rala"]["rows"] == len(passages) + len(added)
    snapshot = writer.snapshot()
    served = rala_from_index(snapshot, rala.encoder, candidates=30)
    assert _ranking(served, snapshot, queries) == expected
    writer.compact()
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    assert CorpusIndex(tmp_path / "idx").info()["sidecars"]["rala"]["rows"] == len(live)
    served = rala_from_index(snapshot, rala.encoder, candidates=30)
    assert _ranking(served, snapshot, queries) == expected
    assert served.encoded_at_query_time == 0

    # an upsert through a writer with the producer writes the new rows' states
    writer = CorpusIndex(tmp_path / "idx", sidecars=[RaLaSidecar(rala)])
    changed = Passage(live[0].id, live[0].text + " Changed.", live[0].title)
    writer.upsert([changed], vectors_by_id[changed.id][None, :])
    served = rala_from_index(writer.snapshot(), rala.encoder)
    [states_of] = served.store.get([changed.id])
    [fresh_of] = rala.encoder.encode(
        [changed.embedding_text], rala.layout, drop_punctuation=True, pooling=rala.pooling
    )
    assert states_of is not None and states_of.n_tokens == fresh_of.n_tokens


def test_rala_states_are_carried_through_merges(tmp_path, wiki_slice, rala) -> None:
    passages, vectors_by_id, queries = wiki_slice
    passages, queries = passages[:RALA_SIZE], queries[:5]
    states = rala.build_store(passages)
    _fresh_index(tmp_path, "idx", passages, vectors_by_id, RaLaSidecar(rala, states=states))
    writer = CorpusIndex(
        tmp_path / "idx", sidecars=[RaLaSidecar(rala, states=states)], merge=MergePolicy(2)
    )
    live = _small_writes(writer, passages, vectors_by_id, random.Random(5))
    snapshot = writer.snapshot()
    assert len(snapshot.segments.segments) < 6
    served = rala_from_index(snapshot, rala.encoder, candidates=30)
    reference = RaLaReranker(rala.encoder, store=rala.build_store(live), candidates=30)
    assert _ranking(served, snapshot, queries) == _ranking(reference, snapshot, queries)
    assert served.encoded_at_query_time == 0


@pytest.fixture(scope="module")
def impostor(minilm) -> HiddenStateEncoder:
    """MiniLM's shape and name with other weights."""
    return HiddenStateEncoder(perturbed_copy(minilm.model), name=HiddenStateEncoder(minilm).name)


def test_rala_states_of_another_model_or_layout_are_refused(
    tmp_path, wiki_slice, rala, impostor
) -> None:
    passages, vectors_by_id, queries = wiki_slice
    passages = passages[:10]
    index = _fresh_index(tmp_path, "idx", passages, vectors_by_id, RaLaSidecar(rala))
    snapshot = index.snapshot()
    pool = _pool(snapshot, queries[0], k=5)
    with pytest.raises(ValueError, match="token layers"):
        rala_from_index(snapshot, rala.encoder, layer=3).rerank(queries[0], pool)
    with pytest.raises(ValueError, match="is a different model"):
        rala_from_index(snapshot, impostor).rerank(queries[0], pool)
    new = ([Passage("new", "A new passage.", "New")], np.ones((1, 384), np.float32))
    with pytest.raises(ValueError, match="'rala' sidecar .* was made by .*replace=True"):
        CorpusIndex(index.path, sidecars=[RaLaSidecar(RaLaReranker(rala.encoder, layer=3))]).add(
            *new
        )
    with pytest.raises(ValueError, match="states of another model .*replace=True"):
        CorpusIndex(index.path, sidecars=[RaLaSidecar(RaLaReranker(impostor))]).add(*new)
    assert CorpusIndex(index.path).version == snapshot.version  # nothing was written


def test_a_refused_write_leaves_no_segment_and_an_index_without_sidecars_serves_the_rest(
    tmp_path, wiki_slice
) -> None:
    from rag_multihop.store import graph_fusion_retriever

    passages, vectors_by_id, queries = wiki_slice
    index = _fresh_index(
        tmp_path,
        "idx",
        passages[:20],
        vectors_by_id,
        AssociationSidecar.of(_model(passages[:20], vectors_by_id)),
    )
    other = AssociationSidecar.of(_model(passages[:20], vectors_by_id, seed=3))
    index.add([passages[31]], vectors_by_id[passages[31].id][None])  # the next write merges
    segments = sorted((tmp_path / "idx" / "segments").iterdir())
    sidecars = sorted((tmp_path / "idx" / "sidecars").iterdir())
    with pytest.raises(ValueError, match="was made by model="):
        CorpusIndex(index.path, sidecars=[other], merge=MergePolicy(factor=2)).add(
            [passages[30]], vectors_by_id[passages[30].id][None]
        )
    assert sorted((tmp_path / "idx" / "segments").iterdir()) == segments
    assert sorted((tmp_path / "idx" / "sidecars").iterdir()) == sidecars
    plain = CorpusIndex.build(
        tmp_path / "plain", passages[:20], np.stack([vectors_by_id[p.id] for p in passages[:20]])
    )
    assert plain.info()["sidecars"] == {}
    assert graph_fusion_retriever(plain.snapshot()).retrieve(queries[0], k=3)
