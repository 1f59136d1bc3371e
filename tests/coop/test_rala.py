"""RaLa with the bundled MiniLM: hidden states, the precomputed store, the reranker."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging

import numpy as np
import pytest

from rag_multihop import Candidate, Passage, Query
from rag_multihop._atomic import ArtifactError, artifact_path
from rag_multihop.coop import (
    HiddenStateEncoder,
    PassageStates,
    RaLaReranker,
    RaLaRetriever,
    RaLaSettings,
)
from rag_multihop.coop.settings import SCORING_NAMES
from rag_multihop.coop.states import HiddenStatesUnavailable, StateLayout, is_punctuation
from rag_multihop.testing import POLISH_WEDDING_QUESTION, HashingEncoder
from tests.coop.models import perturbed_copy


@pytest.fixture(scope="module")
def states_encoder(minilm) -> HiddenStateEncoder:
    return HiddenStateEncoder(minilm)


def _candidates(passages: list[Passage]) -> list[Candidate]:
    return [
        Candidate(p, 1.0 - 0.1 * i, rank=i + 1, signals={"dense": 1.0 - 0.1 * i})
        for i, p in enumerate(passages)
    ]


def test_hidden_states_shapes_units_and_the_pooled_last_layer_is_the_sentence_embedding(
    states_encoder: HiddenStateEncoder, minilm
) -> None:
    assert (states_encoder.n_layers, states_encoder.dim, states_encoder.pooling) == (6, 384, "mean")
    text = "Polish Wedding is a 1998 film, written and directed by Theresa Connelly."
    [states] = states_encoder.encode([text], StateLayout((6, 2), (6, 0)))
    assert states.tokens.shape[0] == 2 and states.pooled.shape == (2, 384)
    assert np.allclose(np.linalg.norm(states.tokens, axis=-1), 1.0, atol=1e-5)
    assert states.n_tokens == len(states.ids)  # a query keeps every token
    assert np.dot(states.pooled[0], minilm.encode([text])[0]) == pytest.approx(1.0, abs=1e-5)
    [dropped] = states_encoder.encode([text], StateLayout((6,)), drop_punctuation=True)
    assert dropped.n_tokens == states.n_tokens - 2  # the comma and the full stop
    assert len(dropped.ids) == len(states.ids)  # the vocabulary keeps them


def test_punctuation_tokens() -> None:
    assert [is_punctuation(t) for t in (",", "##.", "Ġ)", "it", "[SEP]", "")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


def test_a_model_without_hidden_states_is_refused_clearly() -> None:
    encoder = HiddenStateEncoder(HashingEncoder(), name="hashing")
    with pytest.raises(HiddenStatesUnavailable, match="not a sentence-transformers model"):
        _ = encoder.n_layers

    class NoTransformer:
        tokenizer = None

    with pytest.raises(HiddenStatesUnavailable, match="not a Hugging Face transformer"):
        _ = HiddenStateEncoder([NoTransformer()], name="odd").n_layers


def test_layers_outside_the_encoder_are_named(states_encoder: HiddenStateEncoder) -> None:
    with pytest.raises(ValueError, match="layer 9 does not exist"):
        states_encoder.encode(["x"], StateLayout((9,)))
    with pytest.raises(ValueError, match="layer 9 does not exist"):
        _ = RaLaReranker(states_encoder, layer=9).layout


def test_settings_validation_names_parameter_and_value() -> None:
    for kwargs, message in (
        ({"scoring": "eq5"}, "scoring must be one of"),
        ({"buckets": 0}, r"buckets must be an integer in \[1, 64\], got 0"),
        ({"candidate_layers": (1, 1)}, "must not repeat"),
        ({"layer": 3, "candidate_layers": (4,)}, "must lie below layer 3"),
        ({"pooling": "max"}, "pooling must be one of"),
        ({"token_weighting": "bm25"}, "token_weighting must be one of"),
        ({"candidates": 0}, "candidates must be a positive integer, got 0"),
        ({"drop_punctuation": "yes"}, "drop_punctuation must be True or False"),
    ):
        with pytest.raises(ValueError, match=message):
            RaLaSettings(**kwargs)


@pytest.mark.parametrize("scoring", SCORING_NAMES)
def test_rerank_puts_the_bridge_first_keeps_signals_and_leaves_inputs_alone(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage], scoring: str
) -> None:
    candidates = _candidates(polish_wedding[::-1])
    before = [dataclasses.replace(c) for c in candidates]
    ranked = RaLaReranker(states_encoder, scoring=scoring).rerank(
        Query(POLISH_WEDDING_QUESTION), candidates
    )
    assert candidates == before  # nothing mutated
    assert ranked[0].id == "polish-wedding"
    assert [c.rank for c in ranked] == list(range(1, 6))
    assert all({"dense", "rala", "maxsim"} <= set(c.signals) for c in ranked)
    assert all(c.score <= c.signals["rala"] for c in ranked)  # lowered where the first stage kept
    assert all(a.score > b.score for a, b in itertools.pairwise(ranked))
    if scoring == "gap-weighted":
        layers = {c.signals["premature_layer"] for c in ranked}
        assert layers <= {1.0, 3.0, 4.0}  # the default draw for 6 layers and 3 buckets
        assert all(
            c.signals["gap_weight"]
            == pytest.approx((c.signals["last_similarity"] - c.signals["premature_similarity"]) / 2)
            for c in ranked
        )


def test_pinned_scores_of_the_bundled_model(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage]
) -> None:
    ranked = RaLaReranker(states_encoder).rerank(
        Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding)
    )
    assert [c.id for c in ranked][:2] == ["polish-wedding", "theresa-connelly"]
    assert ranked[0].score == pytest.approx(0.6549, abs=2e-3)


def test_precomputed_store_and_query_time_agree_and_round_trip(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage], tmp_path
) -> None:
    query = Query(POLISH_WEDDING_QUESTION)
    candidates = _candidates(polish_wedding)
    fresh = RaLaReranker(states_encoder, scoring="gap-weighted")
    live = fresh.rerank(query, candidates)
    assert fresh.encoded_at_query_time == len(candidates)

    stored = RaLaReranker(states_encoder, scoring="gap-weighted", codec="float16")
    store = stored.build_store(polish_wedding)
    store.save(tmp_path / "states")
    stored.store = PassageStates.load(tmp_path / "states")
    from_store = stored.rerank(query, candidates)
    assert stored.encoded_at_query_time == 0
    assert [c.id for c in from_store] == [c.id for c in live]
    assert [c.score for c in from_store] == pytest.approx([c.score for c in live], abs=2e-3)
    assert store.codec.name == "float16" and store.payload["tokens"].dtype == np.float16
    assert store.bytes_per_passage == pytest.approx(store.nbytes / 5)

    # a candidate missing from the store is encoded at query time
    extra = Passage("extra", "Theresa Connelly was born in Philadelphia.", title="Extra")
    stored.rerank(query, [*candidates, Candidate(extra, 0.0)])
    assert stored.encoded_at_query_time == 1


def test_the_compressed_store_ranks_as_the_float16_one(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage], tmp_path
) -> None:
    query = Query(POLISH_WEDDING_QUESTION)
    candidates = _candidates(polish_wedding)
    exact = RaLaReranker(states_encoder)  # float16, the default
    exact.build_store(polish_wedding)
    packed = RaLaReranker(states_encoder, codec="residual-2bit")
    store = packed.build_store(polish_wedding)
    assert store.codec.name == "residual-2bit"
    store.save(tmp_path / "packed")
    packed.store = PassageStates.load(tmp_path / "packed", mmap=True)
    want, got = exact.rerank(query, candidates), packed.rerank(query, candidates)
    assert (
        [c.id for c in got][:2]
        == [c.id for c in want][:2]
        == ["polish-wedding", "theresa-connelly"]
    )
    assert [c.score for c in got] == pytest.approx([c.score for c in want], abs=0.03)
    assert packed.encoded_at_query_time == 0


def test_a_store_of_another_layout_is_refused(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage]
) -> None:
    store = RaLaReranker(states_encoder).build_store(polish_wedding)
    with pytest.raises(ValueError, match="PassageStates.build"):
        _ = RaLaReranker(states_encoder, scoring="layer-gap", store=store).layout
    with pytest.raises(ValueError, match="drop_punctuation"):
        _ = RaLaReranker(states_encoder, drop_punctuation=False, store=store).layout


def test_corrupt_store_files_fail_at_load_naming_the_file(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage], tmp_path
) -> None:
    RaLaReranker(states_encoder).build_store(polish_wedding).save(tmp_path / "s")
    folder = artifact_path(tmp_path / "s")
    np.save(folder / "offsets.npy", np.array([0, 3]))
    with pytest.raises(ArtifactError, match="do not belong together"):
        PassageStates.load(tmp_path / "s")
    (folder / "pooled.npy").write_bytes(b"not an array")
    with pytest.raises(ArtifactError, match="pooled.npy is not a readable array"):
        PassageStates.load(tmp_path / "s")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="not a valid PassageStates config"):
        PassageStates.load(tmp_path / "s")


def test_edge_cases(states_encoder: HiddenStateEncoder, polish_wedding: list[Passage]) -> None:
    rala = RaLaReranker(states_encoder)
    query = Query(POLISH_WEDDING_QUESTION)
    assert rala.rerank(query, []) == []
    candidates = _candidates(polish_wedding)
    assert len(rala.rerank(query, candidates, top_n=50)) == 5  # top_n above the pool
    assert len(rala.rerank(query, candidates, top_n=2)) == 2
    with pytest.raises(ValueError, match="duplicate passage ids"):
        rala.rerank(query, [candidates[0], candidates[0]])
    with pytest.raises(ValueError, match="top_n must be a positive integer"):
        rala.rerank(query, candidates, top_n=0)
    with pytest.raises(ValueError, match="no passages to store"):
        PassageStates([], [], StateLayout((6,)), encoder_name="x")


def test_retriever_with_k_larger_than_the_pool(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage]
) -> None:
    class Five:
        def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
            return _candidates(polish_wedding)[:k]

    retriever = RaLaRetriever(Five(), RaLaReranker(states_encoder), candidates=100)
    found = retriever.retrieve(Query(POLISH_WEDDING_QUESTION), k=20)
    assert len(found) == 5 and found[0].id == "polish-wedding"


@pytest.fixture(scope="module")
def other_model(minilm):
    """A model of MiniLM's shape (6 layers, 384 dimensions) with other weights."""
    return perturbed_copy(minilm.model)


def test_a_store_of_another_model_of_the_same_shape_is_refused(
    states_encoder: HiddenStateEncoder, other_model, polish_wedding: list[Passage], tmp_path
) -> None:
    impostor = HiddenStateEncoder(other_model, name=states_encoder.name)  # same name and shape
    assert (impostor.n_layers, impostor.dim) == (states_encoder.n_layers, states_encoder.dim)
    RaLaReranker(impostor).build_store(polish_wedding).save(tmp_path / "states")
    store = PassageStates.load(tmp_path / "states")
    assert store.fingerprint is not None and store.fingerprint.dim == 384
    reranker = RaLaReranker(states_encoder, store=store)
    with pytest.raises(ValueError, match=r"is a different model: its layer-6 states") as refused:
        reranker.rerank(Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding))
    assert "reranker.build_store(passages)" in str(refused.value)
    late = RaLaReranker(states_encoder)
    late.store = store  # assigned after construction: checked at first use
    with pytest.raises(ValueError, match="is a different model"):
        late.rerank(Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding))
    late.build_store(polish_wedding)  # replacing it with this encoder's states works
    assert late.rerank(Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding))


def test_a_store_is_accepted_by_the_same_model_under_another_name(
    states_encoder: HiddenStateEncoder, minilm, polish_wedding: list[Passage]
) -> None:
    store = RaLaReranker(states_encoder).build_store(polish_wedding)
    renamed = RaLaReranker(HiddenStateEncoder(minilm, name="my-minilm"), store=store)
    ranked = renamed.rerank(Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding))
    assert ranked[0].id == "polish-wedding" and renamed.encoded_at_query_time == 0


def test_duplicate_ids_are_refused_when_building_or_loading_a_store(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage], tmp_path
) -> None:
    twin = Passage("rope", "Rope is a play by Patrick Hamilton.", title="Rope (play)")
    with pytest.raises(ValueError, match=r"ids must be unique: 1 repeated, e.g. \['rope'\]"):
        RaLaReranker(states_encoder).build_store([*polish_wedding, twin])
    RaLaReranker(states_encoder).build_store(polish_wedding).save(tmp_path / "s")
    config_path = artifact_path(tmp_path / "s") / "config.json"
    config = json.loads(config_path.read_text())
    config["ids"][0] = "rope"  # one passage's states would be served under another's id
    config_path.write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match=r"config\.json is not a valid .*\['rope'\]"):
        PassageStates.load(tmp_path / "s")


def test_a_store_saved_without_a_fingerprint_is_checked_by_name_with_a_warning(
    states_encoder: HiddenStateEncoder,
    minilm,
    polish_wedding: list[Passage],
    tmp_path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    RaLaReranker(states_encoder).build_store(polish_wedding).save(tmp_path / "s")
    folder = artifact_path(tmp_path / "s")
    config = json.loads((folder / "config.json").read_text())
    for key in ("probe_texts", "kind", "rag_multihop_version"):  # as an older version wrote it
        del config[key]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "encoder_fingerprint.npy").unlink()
    store = PassageStates.load(tmp_path / "s")
    assert store.fingerprint is None
    with caplog.at_level(logging.WARNING):
        ranked = RaLaReranker(states_encoder, store=store).rerank(
            Query(POLISH_WEDDING_QUESTION), _candidates(polish_wedding)
        )
    assert ranked[0].id == "polish-wedding" and "no encoder fingerprint" in caplog.text
    other = RaLaReranker(HiddenStateEncoder(minilm, name="other"), store=store)
    with pytest.raises(ValueError, match="has no encoder fingerprint .* only names can be"):
        _ = other.layout


def test_rala_takes_a_rank_from_the_first_stage_only_by_a_clear_lead(
    states_encoder: HiddenStateEncoder, polish_wedding: list[Passage]
) -> None:
    # an untitled corpus: file-like titles, as a user's chunks carry
    untitled = [dataclasses.replace(p, title=f"doc-{i:04d}") for i, p in enumerate(polish_wedding)]
    candidates = _candidates(untitled[::-1])
    query = Query(POLISH_WEDDING_QUESTION)
    plain = RaLaReranker(states_encoder, first_stage_margin=0.0).rerank(query, candidates)
    assert all(c.score == c.signals["rala"] for c in plain)
    assert not any("first_stage" in c.signals for c in plain)
    rala = {c.id: c.signals["rala"] for c in plain}
    for margin in (0.01, 0.05, 0.2, 1.0):
        ranked = RaLaReranker(states_encoder, first_stage_margin=margin).rerank(query, candidates)
        remaining = [c.id for c in candidates]
        for c in ranked:  # each rank: the first stage's candidate, unless RaLa leads by margin
            best = max(remaining, key=lambda i: rala[i])
            expected = best if rala[best] >= rala[remaining[0]] + margin else remaining[0]
            assert c.id == expected
            assert ("first_stage" in c.signals) == (expected != best)
            remaining.remove(c.id)
    never = RaLaReranker(states_encoder, first_stage_margin=1.0).rerank(query, candidates)
    assert [c.id for c in never] == [c.id for c in candidates]  # a cosine mean never leads by 1
    with pytest.raises(ValueError, match="first_stage_margin must be"):
        RaLaSettings(first_stage_margin=-0.1)
