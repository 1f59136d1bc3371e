"""AssociationReranker: scores by hand, inputs untouched, where vectors come from, errors."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query, Reranker, rank_candidates
from rag_multihop.association import (
    AssociationReranker,
    AssociationRetriever,
    PairSet,
    TrainingConfig,
    association_transform,
)
from rag_multihop.testing import HashingEncoder

pytest.importorskip("torch")

TEXTS = [
    "Veldmark Ropeworks was founded by Marit Hallendor in Kelmsby.",
    "Marit Hallendor was born in the Merrin Valley.",
    "The Glass Orchard is a folk band from Tessaly.",
    "Tessaly is a coastal town known for its orchards.",
    "Lindmere is the capital of Norvale.",
    "The Merrin River drains the Vardel Mountains.",
    "Kelmsby is a port on the Marl Sea.",
    "Aldo Brenn directed the film Salt Harbour.",
    "Salt Harbour is a drama set in Kelmsby.",
    "The Vardel Mountains separate Norvale from Ostria.",
]
IDS = [f"p{i}" for i in range(len(TEXTS))]
PAIRS = [("p0", "p1"), ("p2", "p3"), ("p7", "p8"), ("p4", "p9")]
DIM = 32


@pytest.fixture(scope="module")
def encoder() -> HashingEncoder:
    return HashingEncoder(dim=DIM, name="hashing-test")


@pytest.fixture(scope="module")
def vectors(encoder) -> np.ndarray:
    return encoder.encode(TEXTS)


@pytest.fixture(scope="module")
def fitted(vectors) -> AssociationReranker:
    config = TrainingConfig(epochs=30, batch_size=8, learning_rate=1e-2, seed=0)
    return AssociationReranker(training=config).fit(
        IDS, vectors, PairSet.from_pairs(PAIRS, source="gold"), encoder_name="hashing-test"
    )


def candidates(vectors: np.ndarray, query: np.ndarray, ids=IDS) -> list[Candidate]:
    """Dense-style candidates: score and ``"dense"`` signal = cosine with ``query``."""
    found = []
    for pid in ids:
        cosine = float(vectors[IDS.index(pid)] @ query)
        found.append(
            Candidate(Passage(pid, TEXTS[IDS.index(pid)]), cosine, signals={"dense": cosine})
        )
    return rank_candidates(found)


def test_is_a_core_reranker(fitted):
    assert isinstance(fitted, Reranker)
    assert fitted.is_fitted and fitted.dim == DIM and fitted.encoder_name == "hashing-test"
    assert fitted.passage_ids == tuple(IDS)
    stats = fitted.provenance
    assert stats["pair_stats"]["pairs"] == 4 and stats["training_stats"]["directed_pairs"] == 8


@pytest.mark.parametrize("mode", ["mixed", "reverse"])
def test_scores_match_the_formula_computed_by_hand(fitted, vectors, mode):
    reranker = fitted.with_settings(lambda_=0.3, mode=mode)
    q = vectors[0]
    found = candidates(vectors, q)
    ranked = reranker.rerank(Query("q", embedding=q), found)
    f_p = association_transform(vectors, fitted.weights)
    f_q = association_transform(q[None, :], fitted.weights)[0]
    cos = vectors @ q
    assoc = f_p @ q if mode == "reverse" else 0.5 * (vectors @ f_q + f_p @ q)
    expected = 0.7 * cos + 0.3 * assoc
    by_id = {c.id: c for c in ranked}
    for i, pid in enumerate(IDS):
        assert by_id[pid].score == pytest.approx(expected[i], abs=1e-5)
        assert by_id[pid].signals["cosine"] == pytest.approx(cos[i], abs=1e-5)
        assert by_id[pid].signals["association"] == pytest.approx(assoc[i], abs=1e-5)
        assert by_id[pid].signals["dense"] == pytest.approx(cos[i], abs=1e-5)
    assert [c.rank for c in ranked] == list(range(1, len(IDS) + 1))
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_lambda_zero_is_cosine_order_and_one_is_association_order(fitted, vectors):
    q = vectors[7]
    found = candidates(vectors, q)
    by_cos = fitted.with_settings(lambda_=0.0).rerank(Query("q", embedding=q), found)
    assert [c.id for c in by_cos] == [c.id for c in found]
    by_assoc = fitted.with_settings(lambda_=1.0).rerank(Query("q", embedding=q), found)
    values = [c.signals["association"] for c in by_assoc]
    assert values == sorted(values, reverse=True)


def test_training_pairs_are_promoted(fitted, vectors):
    # p8 (Salt Harbour) is p7's trained partner: association lifts it above cosine alone.
    q = vectors[7]
    found = candidates(vectors, q)
    ranked = fitted.with_settings(mode="reverse").rerank(Query("q", embedding=q), found)
    cos_rank = [c.id for c in found].index("p8")
    assert [c.id for c in ranked].index("p8") <= cos_rank
    assert ranked[0].signals["association"] > 0


def test_inputs_are_not_changed(fitted, vectors):
    found = candidates(vectors, vectors[0])
    before = list(found)
    signals_before = [dict(c.signals) for c in found]
    query = Query("q", embedding=vectors[0].copy())
    embedding_before = query.embedding.copy()
    ranked = fitted.rerank(query, found, top_n=3)
    assert all(a is b for a, b in zip(found, before, strict=True)) and len(found) == len(before)
    assert [dict(c.signals) for c in found] == signals_before
    assert not any(r is c for r in ranked for c in found)
    np.testing.assert_array_equal(query.embedding, embedding_before)


def test_top_n_and_empty_candidates(fitted, vectors):
    query = Query("q", embedding=vectors[0])
    assert len(fitted.rerank(query, candidates(vectors, vectors[0]), top_n=3)) == 3
    assert fitted.rerank(query, []) == []
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=f"top_n must be a positive integer, got {bad!r}"):
            fitted.rerank(query, [], top_n=bad)


def test_duplicate_candidates_are_an_error(fitted, vectors):
    found = candidates(vectors, vectors[0], ids=["p1", "p2", "p1"])
    with pytest.raises(ValueError, match=r"unique passage ids; duplicated: \['p1'\]"):
        fitted.rerank(Query("q", embedding=vectors[0]), found)


def test_query_without_embedding_needs_an_encoder(fitted, vectors, encoder):
    found = candidates(vectors, vectors[0])
    with pytest.raises(ValueError, match="has no embedding and the reranker has no encoder"):
        fitted.rerank(Query(TEXTS[0]), found)
    by_text = fitted.with_settings(encoder=encoder).rerank(Query(TEXTS[0]), found)
    by_vector = fitted.rerank(Query("q", embedding=vectors[0]), found)
    assert_same_ranking(by_text, by_vector)


def test_query_dimension_mismatch_names_both_dims(fitted, vectors):
    found = candidates(vectors, vectors[0])
    with pytest.raises(ValueError, match=r"dimension 8 but the association model expects 32 \("):
        fitted.rerank(Query("q", embedding=np.ones(8, dtype=np.float32)), found)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_query_embedding(fitted, vectors, bad):
    embedding = vectors[0].copy()
    embedding[3] = bad
    with pytest.raises(ValueError, match="query embeddings contain NaN or inf"):
        fitted.rerank(Query("q", embedding=embedding), candidates(vectors, vectors[0]))


def test_unknown_passages_without_embedding_are_named(fitted, vectors):
    found = [Candidate(Passage(f"new{i}", "x"), 0.1) for i in range(7)]
    with pytest.raises(
        ValueError,
        match=r"7 passage\(s\) are not stored in the association model .*\['new0', .*add_passages",
    ):
        fitted.rerank(Query("q", embedding=vectors[0]), found)


def test_unknown_passages_are_transformed_on_the_fly(vectors, encoder):
    config = TrainingConfig(epochs=5, batch_size=8, seed=1)
    known = AssociationReranker(training=config).fit(
        IDS[:6], vectors[:6], PAIRS[:2], encoder_name="hashing-test"
    )
    q = Query("q", embedding=vectors[7])
    found = candidates(vectors, vectors[7])
    mapping = {pid: vectors[IDS.index(pid)] for pid in IDS[6:]}
    on_the_fly = known.rerank(q, found, vectors=mapping)
    by_encoder = known.with_settings(encoder=encoder).rerank(q, found)
    assert_same_ranking(by_encoder, on_the_fly)
    extended = known.add_passages(IDS[6:], vectors[6:])
    assert extended.passage_ids == tuple(IDS)
    assert known.passage_ids == tuple(IDS[:6])  # the original reranker is unchanged
    assert_same_ranking(extended.rerank(q, found), on_the_fly)


def assert_same_ranking(first: list[Candidate], second: list[Candidate]) -> None:
    assert [c.id for c in first] == [c.id for c in second]
    np.testing.assert_allclose([c.score for c in first], [c.score for c in second], atol=1e-6)


def test_given_vectors_are_checked(fitted, vectors):
    found = [Candidate(Passage("new", "x"), 0.1)]
    query = Query("q", embedding=vectors[0])
    with pytest.raises(
        ValueError, match=r"vectors given for \['new'\] have dimension 5, expected 32"
    ):
        fitted.rerank(query, found, vectors={"new": np.ones(5)})
    with pytest.raises(ValueError, match="given vectors contain NaN or inf"):
        fitted.rerank(query, found, vectors={"new": np.full(DIM, np.nan)})


def test_stored_vectors_win_over_given_ones(fitted, vectors):
    found = candidates(vectors, vectors[0])
    query = Query("q", embedding=vectors[0])
    noise = {pid: np.ones(DIM) for pid in IDS}
    assert fitted.rerank(query, found, vectors=noise) == fitted.rerank(query, found)


def test_add_passages_replaces_known_ids_and_checks_dims(vectors):
    config = TrainingConfig(epochs=2, batch_size=8)
    reranker = AssociationReranker(training=config).fit(IDS, vectors, PAIRS, encoder_name="h")
    before = reranker.passage_vectors(["p0"])
    replaced = reranker.add_passages(["p0"], vectors[5:6])
    np.testing.assert_allclose(replaced.passage_vectors(["p0"]), vectors[5:6], atol=1e-6)
    np.testing.assert_array_equal(reranker.passage_vectors(["p0"]), before)
    assert len(replaced.passage_ids) == len(IDS)
    with pytest.raises(
        ValueError, match="passage vectors have dimension 3 but the model expects 32"
    ):
        reranker.add_passages(["z"], np.ones((1, 3)))
    with pytest.raises(KeyError, match=r"stores no vectors for 1 id\(s\): \['zz'\]"):
        reranker.passage_vectors(["zz"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lambda_": 1.5}, r"lambda_ must be in \[0, 1\], got 1.5"),
        ({"lambda_": -0.1}, r"lambda_ must be in \[0, 1\], got -0.1"),
        ({"mode": "forward"}, r"mode must be one of \['mixed', 'reverse'\], got 'forward'"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AssociationReranker(**kwargs)
    with pytest.raises(ValueError, match=message):
        AssociationReranker().with_settings(**kwargs)


def test_other_encoder_is_rejected(fitted):
    with pytest.raises(
        ValueError, match=r"encoder 'hashing-test' but the given encoder is 'other'\. "
    ):
        fitted.with_settings(encoder=HashingEncoder(dim=DIM, name="other"))


def test_unfitted_reranker_says_so(vectors):
    with pytest.raises(RuntimeError, match="not fitted; call fit"):
        AssociationReranker().rerank(
            Query("q", embedding=vectors[0]), candidates(vectors, vectors[0])
        )


@pytest.mark.parametrize(
    ("ids", "pairs", "message"),
    [
        (IDS[:3], PAIRS, "got 3 passage ids but 10 vectors"),
        (["a"] * 10, PAIRS, r"passage ids must be unique; duplicated: \['a'\]"),
        ([], PAIRS, "no passages given"),
        (IDS, [("p0", "zz"), ("yy", "p1")], r"2 passage id\(s\) that are not in the corpus, e.g. "),
    ],
)
def test_fit_rejects_bad_input(vectors, ids, pairs, message):
    with pytest.raises(ValueError, match=message):
        AssociationReranker().fit(ids, vectors, pairs, encoder_name="h")


def test_fit_needs_an_encoder_name(vectors):
    with pytest.raises(ValueError, match="fit needs encoder_name"):
        AssociationReranker().fit(IDS, vectors, PAIRS)


def test_fit_is_deterministic(vectors):
    config = TrainingConfig(epochs=3, batch_size=8, seed=4)
    runs = [
        AssociationReranker(training=config).fit(IDS, vectors, PAIRS, encoder_name="h")
        for _ in range(2)
    ]
    q = Query("q", embedding=vectors[2])
    found = candidates(vectors, vectors[2])
    assert runs[0].rerank(q, found) == runs[1].rerank(q, found)


def test_association_retriever(fitted, vectors):
    class Fixed:
        def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
            self.asked = k
            return candidates(vectors, vectors[0])[:k]

    base = Fixed()
    retriever = AssociationRetriever(base, fitted, candidates=6)
    found = retriever.retrieve(Query("q", embedding=vectors[0]), k=2)
    assert base.asked == 6 and len(found) == 2
    assert {"association", "cosine", "dense"} <= set(found[0].signals)
    with pytest.raises(ValueError, match="candidates must be a positive integer, got 0"):
        AssociationRetriever(base, fitted, candidates=0)
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        retriever.retrieve(Query("q", embedding=vectors[0]), k=0)
