"""AssociationRanker, the Haystack ranker component: translation only, inputs untouched."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest
from hs_fakes import HashingTextEmbedder

from rag_multihop.testing import HashingEncoder, hashing_vectors

pytest.importorskip("torch")
pytest.importorskip("haystack")

from haystack import Document, Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.rankers.rag_multihop import AssociationRanker

from rag_multihop import Candidate, Passage, Query
from rag_multihop.association import AssociationReranker, TrainingConfig

TEXTS = {
    "rope": "Veldmark Ropeworks was founded by Marit Hallendor in Kelmsby.",
    "marit": "Marit Hallendor was born in the Merrin Valley.",
    "band": "The Glass Orchard is a folk band from Tessaly.",
    "tessaly": "Tessaly is a coastal town known for its orchards.",
    "capital": "Lindmere is the capital of Norvale.",
    "river": "The Merrin River drains the Vardel Mountains.",
}
QUESTION = "Where was the founder of Veldmark Ropeworks born?"
ENCODER = HashingEncoder(64, name="hashing-test")


@pytest.fixture(autouse=True)
def hashing_default_encoder(monkeypatch):
    """The ranker's default encoder is the bundled MiniLM; tests use the hashing encoder."""
    import rag_multihop.encoders.sentence_transformer as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda **_: ENCODER)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    vectors = ENCODER.encode(list(TEXTS.values()))
    config = TrainingConfig(epochs=20, batch_size=8, learning_rate=1e-2, seed=0)
    reranker = AssociationReranker(encoder=ENCODER, lambda_=0.5, training=config)
    reranker.fit(list(TEXTS), vectors, [("rope", "marit"), ("band", "tessaly")])
    return str(reranker.save(tmp_path_factory.mktemp("aar") / "model"))


def documents(ids=TEXTS) -> list[Document]:
    return [
        Document(id=pid, content=TEXTS.get(pid, pid), meta={"n": i}, score=1.0 - i / 10)
        for i, pid in enumerate(ids)
    ]


def test_ranks_like_the_core_and_keeps_signals_in_meta(model_path):
    given = documents()
    result = AssociationRanker(model_path, top_k=3).run(query=QUESTION, documents=given)
    core = AssociationReranker.load(model_path).rerank(
        Query(QUESTION, embedding=ENCODER.encode([QUESTION])[0]),
        [Candidate(Passage(d.id, "x"), d.score) for d in given],
        top_n=3,
    )
    docs = result["documents"]
    assert [d.id for d in docs] == [c.id for c in core]
    np.testing.assert_allclose([d.score for d in docs], [c.score for c in core], rtol=1e-6)
    assert set(docs[0].meta) == {"n", SIGNALS_KEY}
    assert set(docs[0].meta[SIGNALS_KEY]) == {"association", "cosine", "retrieval_score"}


def test_a_given_first_stage_margin_reaches_the_model(model_path):
    given = documents()
    kept = AssociationRanker(model_path, first_stage_margin=10.0).run(
        query=QUESTION, documents=given
    )
    assert [d.id for d in kept["documents"]] == [d.id for d in given]  # incoming order kept


def test_inputs_are_not_mutated(model_path):
    given = documents()
    snapshot = [dataclasses.asdict(d) for d in given]
    result = AssociationRanker(model_path).run(query=QUESTION, documents=given)
    assert [dataclasses.asdict(d) for d in given] == snapshot
    assert not any(r is d for r in result["documents"] for d in given)


def test_query_embedding_input_and_run_time_top_k(model_path):
    ranker = AssociationRanker(model_path, top_k=5)
    embedding = ENCODER.encode([QUESTION])[0].tolist()
    by_vector = ranker.run(
        query=QUESTION, documents=documents(), top_k=2, query_embedding=embedding
    )
    by_text = ranker.run(query=QUESTION, documents=documents(), top_k=2)
    assert [d.id for d in by_vector["documents"]] == [d.id for d in by_text["documents"]]
    assert len(by_vector["documents"]) == 2


def test_unknown_documents_use_their_embedding_or_the_encoder(model_path):
    extra = [
        Document(id="new", content="Marit Hallendor founded a ropeworks."),
        Document(id="vec", content="x", embedding=ENCODER.encode(["x"])[0].tolist()),
    ]
    result = AssociationRanker(model_path, top_k=8).run(
        query=QUESTION, documents=[*documents(), *extra]
    )
    assert {"new", "vec"} <= {d.id for d in result["documents"]}


def test_id_key_maps_store_ids_to_trained_ids_and_unknown_texts_embed_once(
    model_path, monkeypatch, caplog
):
    class CountingEncoder(HashingEncoder):
        def __init__(self) -> None:
            super().__init__(64, name="hashing-test")
            self.texts: list[str] = []

        def encode(self, texts, *, show_progress=False):
            self.texts.extend(texts)
            return super().encode(texts)

    import rag_multihop.encoders.sentence_transformer as encoders

    counting = CountingEncoder()
    monkeypatch.setattr(encoders, "default_encoder", lambda **_: counting)

    def passage_texts_embedded() -> int:  # the encoder check also embeds the probe texts
        return sum(text in TEXTS.values() for text in counting.texts)

    uuid_documents = [
        Document(id=f"uuid-{i}", content=TEXTS[pid], meta={"doc_id": pid}, score=1.0 - i / 10)
        for i, pid in enumerate(TEXTS)
    ]
    keyed = AssociationRanker(model_path, top_k=3, id_key="doc_id")
    expected = [
        d.id for d in AssociationRanker(model_path, top_k=3).run(QUESTION, documents())["documents"]
    ]
    got = keyed.run(query=QUESTION, documents=uuid_documents)["documents"]
    assert [d.meta["doc_id"] for d in got] == expected and passage_texts_embedded() == 0
    assert got[0].id.startswith("uuid-")  # the store's documents come back
    unkeyed = AssociationRanker(model_path, top_k=3)
    with caplog.at_level("WARNING"):
        for _ in range(3):
            unkeyed.run(query=QUESTION, documents=uuid_documents)
    assert passage_texts_embedded() == len(TEXTS)  # each unknown text once, then remembered
    warnings = [r for r in caplog.records if "not in the association model" in r.message]
    assert len(warnings) == 1 and "id_key" in warnings[0].message


def test_warm_up_is_idempotent_and_empty_input(model_path):
    ranker = AssociationRanker(model_path)
    assert ranker.run(query=QUESTION, documents=[]) == {"documents": []}
    ranker.warm_up()
    loaded = ranker._reranker
    ranker.warm_up()
    assert ranker._reranker is loaded is not None


def test_run_async_matches_run(model_path):
    ranker = AssociationRanker(model_path, top_k=3)
    sync = ranker.run(query=QUESTION, documents=documents())
    in_loop = asyncio.run(ranker.run_async(query=QUESTION, documents=documents()))
    assert in_loop == sync


def test_to_dict_from_dict_round_trip_stores_the_path_not_the_weights(model_path):
    ranker = AssociationRanker(
        model_path, top_k=4, lambda_=0.25, mode="reverse", first_stage_margin=0.01, id_key="doc"
    )
    data = ranker.to_dict()
    assert data == {
        "type": "haystack_integrations.components.rankers.rag_multihop.association."
        "AssociationRanker",
        "init_parameters": {
            "model_path": model_path,
            "index_path": None,
            "top_k": 4,
            "lambda_": 0.25,
            "mode": "reverse",
            "first_stage_margin": 0.01,
            "embedder": None,
            "id_key": "doc",
        },
    }
    assert AssociationRanker.from_dict(data).to_dict() == data


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"top_k": 0}, "top_k must be a positive integer, got 0"),
        ({"lambda_": -1}, r"lambda_ must be in \[0, 1\], got -1"),
        ({"mode": "both"}, r"mode must be one of \['mixed', 'reverse'\], got 'both'"),
        ({"first_stage_margin": -0.5}, "first_stage_margin must be a finite number >= 0"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AssociationRanker("unused", **kwargs)


def test_bad_run_input(model_path):
    ranker = AssociationRanker(model_path)
    with pytest.raises(ValueError, match="top_k must be a positive integer, got -2"):
        ranker.run(query=QUESTION, documents=documents(), top_k=-2)
    with pytest.raises(ValueError, match=r"duplicated: \['rope'\]"):
        ranker.run(query=QUESTION, documents=documents(["rope", "rope"]))
    with pytest.raises(ValueError, match="dimension 3 but the association model expects 64"):
        ranker.run(query=QUESTION, documents=documents(), query_embedding=[0.1, 0.2, 0.3])


def test_chunks_sharing_an_id_key_value_are_refused_naming_the_key_and_the_documents(model_path):
    chunks = [
        Document(id="uuid-1", content="Chunk one.", meta={"doc": "rope"}, score=0.9),
        Document(id="uuid-2", content="Chunk two.", meta={"doc": "rope"}, score=0.8),
        Document(id="uuid-3", content=TEXTS["marit"], meta={"doc": "marit"}, score=0.7),
    ]
    ranker = AssociationRanker(model_path, id_key="doc", embedder=HashingTextEmbedder())
    with pytest.raises(
        ValueError,
        match=r"documents \['uuid-1', 'uuid-2'\] share meta\['doc'\] = 'rope'.*one passage per id",
    ):
        ranker.run(query=QUESTION, documents=chunks)


def test_a_model_from_another_encoder_fails_at_warm_up(model_path, monkeypatch):
    import rag_multihop.encoders.sentence_transformer as encoders

    monkeypatch.setattr(encoders, "default_encoder", lambda **_: HashingEncoder(32, name="minilm"))
    with pytest.raises(ValueError, match=r"'hashing-test' \(dim 64\) .* 'minilm' has dim 32"):
        AssociationRanker(model_path).warm_up()


@component
class ShiftedTextEmbedder:
    """Another model of the same dimension: words hash to other buckets."""

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        return {"embedding": np.roll(hashing_vectors([text], 64)[0], 3).tolist()}


def test_the_embedder_is_checked_by_the_saved_fingerprint(model_path):
    renamed = AssociationRanker(model_path, top_k=2, embedder=HashingTextEmbedder(64))
    assert len(renamed.run(query=QUESTION, documents=documents())["documents"]) == 2
    refused = AssociationRanker(model_path, embedder=ShiftedTextEmbedder())
    with pytest.raises(ValueError, match=r"'ShiftedTextEmbedder' \(also dim 64\) is a different"):
        refused.warm_up()


def test_bundled_minilm_by_path_is_the_model_trained_with_the_hub_name(tmp_path, monkeypatch):
    from rag_multihop.encoders import sentence_transformer

    monkeypatch.undo()  # the real bundled MiniLM, not the autouse hashing stand-in
    minilm = sentence_transformer.default_encoder()
    reranker = AssociationReranker(encoder=minilm, training=TrainingConfig(epochs=2, seed=0))
    reranker.fit(list(TEXTS), minilm.encode(list(TEXTS.values())), [("rope", "marit")])
    path = str(reranker.save(tmp_path / "minilm"))
    ranker = AssociationRanker(path, top_k=2, embedder=minilm.model_name_or_path)
    assert len(ranker.run(query=QUESTION, documents=documents())["documents"]) == 2
    with pytest.raises(ValueError, match=r"\(also dim 384\) is a different model"):
        AssociationRanker(path, embedder=HashingTextEmbedder(384)).warm_up()


def test_in_a_pipeline_after_an_embedding_retriever(model_path):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    embedded = [
        dataclasses.replace(d, embedding=ENCODER.encode([d.content])[0].tolist())
        for d in documents()
    ]
    store.write_documents(embedded)
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=6))
    pipeline.add_component("ranker", AssociationRanker(model_path, top_k=2, mode="reverse"))
    pipeline.connect("retriever.documents", "ranker.documents")
    embedding = ENCODER.encode([QUESTION])[0].tolist()
    out = pipeline.run(
        {
            "retriever": {"query_embedding": embedding},
            "ranker": {"query": QUESTION, "query_embedding": embedding},
        }
    )
    ranked = out["ranker"]["documents"]
    assert len(ranked) == 2 and all("association" in d.meta[SIGNALS_KEY] for d in ranked)


def test_from_a_corpus_index_sidecar_it_ranks_like_the_saved_model_and_sees_later_passages(
    model_path, tmp_path
):
    from rag_multihop.association.indexed import AssociationSidecar
    from rag_multihop.store import CorpusIndex

    first = list(TEXTS)[:4]
    index = CorpusIndex.build(
        tmp_path / "idx",
        [Passage(pid, TEXTS[pid]) for pid in first],
        ENCODER.encode([TEXTS[pid] for pid in first]),
        encoder=ENCODER,
    )
    index.attach_sidecar(AssociationSidecar.of(AssociationReranker.load(model_path)))
    served = AssociationRanker(index_path=str(tmp_path / "idx"), top_k=3)
    saved = AssociationRanker(model_path, top_k=3)

    def ranked(ranker, ids):
        found = ranker.run(query=QUESTION, documents=documents(ids))["documents"]
        return [(d.id, round(d.score, 6)) for d in found]

    assert ranked(served, first) == ranked(saved, first)
    index.add([Passage("capital", TEXTS["capital"])], ENCODER.encode([TEXTS["capital"]]))
    assert ranked(served, [*first, "capital"]) == ranked(saved, [*first, "capital"])
    assert served._loaded().stores("capital")  # reopened: its f(p) written by the index
    assert AssociationRanker.from_dict(served.to_dict()).index_path == str(tmp_path / "idx")
    with pytest.raises(ValueError, match="exactly one of model_path and index_path"):
        AssociationRanker(top_k=3)
