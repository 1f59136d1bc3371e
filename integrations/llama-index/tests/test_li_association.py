"""AssociationRerank, the LlamaIndex node postprocessor: translation only, inputs untouched."""

from __future__ import annotations

import numpy as np
import pytest
from li_fakes import HashingEmbedding

from rag_multihop.testing import HashingEncoder, hashing_vectors

pytest.importorskip("torch")
pytest.importorskip("llama_index.core")

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.postprocessor.rag_multihop import AssociationRerank
from llama_index.retrievers.rag_multihop import SIGNALS_KEY

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
DIM = 64
QUESTION = "Where was the founder of Veldmark Ropeworks born?"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    ids = list(TEXTS)
    vectors = HashingEncoder(DIM).encode(list(TEXTS.values()))
    config = TrainingConfig(epochs=20, batch_size=8, learning_rate=1e-2, seed=0)
    reranker = AssociationReranker(encoder=HashingEncoder(DIM), lambda_=0.5, training=config)
    reranker.fit(ids, vectors, [("rope", "marit"), ("band", "tessaly")])
    return str(reranker.save(tmp_path_factory.mktemp("aar") / "model"))


def nodes(ids=TEXTS) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=pid, text=TEXTS.get(pid, pid)), score=1.0 - i / 10)
        for i, pid in enumerate(ids)
    ]


def test_reranks_like_the_core_and_keeps_signals_in_metadata(model_path):
    given = nodes()
    out = AssociationRerank(model_path=model_path, top_n=3, embed_model=HashingEmbedding())
    result = out.postprocess_nodes(given, query_str=QUESTION)
    core = AssociationReranker.load(model_path).rerank(
        Query(QUESTION, embedding=HashingEncoder(DIM).encode([QUESTION])[0]),
        [Candidate(Passage(n.node.node_id, "x"), n.get_score()) for n in given],
        top_n=3,
    )
    assert [n.node.node_id for n in result] == [c.id for c in core]
    np.testing.assert_allclose([n.score for n in result], [c.score for c in core], rtol=1e-6)
    first = result[0].node
    assert set(first.metadata) == {SIGNALS_KEY}
    assert set(first.metadata[SIGNALS_KEY]) == {"association", "cosine", "retrieval_score"}
    assert "association" not in first.get_content(metadata_mode=MetadataMode.LLM)
    assert "cosine" not in first.get_content(metadata_mode=MetadataMode.EMBED)


def test_a_given_first_stage_margin_reaches_the_model(model_path):
    given = nodes()
    kept = AssociationRerank(
        model_path=model_path, top_n=6, first_stage_margin=10.0, embed_model=HashingEmbedding()
    ).postprocess_nodes(given, query_str=QUESTION)
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in given]  # incoming order


def test_input_nodes_are_not_modified(model_path):
    given = nodes()
    snapshot = [(n.score, dict(n.node.metadata), n.node.embedding, n.node.text) for n in given]
    result = AssociationRerank(
        model_path=model_path, top_n=6, embed_model=HashingEmbedding()
    ).postprocess_nodes(given, query_str=QUESTION)
    assert [(n.score, dict(n.node.metadata), n.node.embedding, n.node.text) for n in given] == (
        snapshot
    )
    assert not any(r is n or r.node is n.node for r in result for n in given)


def test_query_bundle_embedding_is_used_without_an_embed_model(model_path):
    embedding = HashingEncoder(DIM).encode([QUESTION])[0].tolist()
    bundle = QueryBundle(QUESTION, embedding=embedding)
    plain = AssociationRerank(model_path=model_path, top_n=2).postprocess_nodes(
        nodes(), query_bundle=bundle
    )
    with_model = AssociationRerank(
        model_path=model_path, top_n=2, embed_model=HashingEmbedding()
    ).postprocess_nodes(nodes(), query_str=QUESTION)
    assert [n.node.node_id for n in plain] == [n.node.node_id for n in with_model]


def test_query_without_any_embedding_is_a_clear_error(model_path):
    with pytest.raises(ValueError, match="needs an embed model for the query: pass embed_model"):
        AssociationRerank(model_path=model_path).postprocess_nodes(nodes(), query_str=QUESTION)


def test_unknown_nodes_use_node_embedding_then_embed_model(model_path):
    new = NodeWithScore(node=TextNode(id_="new", text="Marit Hallendor founded a ropeworks."))
    with_vector = NodeWithScore(
        node=TextNode(id_="vec", text="x", embedding=HashingEncoder(DIM).encode(["x"])[0].tolist())
    )
    rerank = AssociationRerank(model_path=model_path, top_n=8, embed_model=HashingEmbedding())
    result = rerank.postprocess_nodes([*nodes(), new, with_vector], query_str=QUESTION)
    assert {"new", "vec"} <= {n.node.node_id for n in result}
    bare = AssociationRerank(model_path=model_path)
    bundle = QueryBundle(QUESTION, embedding=HashingEncoder(DIM).encode([QUESTION])[0].tolist())
    with pytest.raises(ValueError, match=r"not stored in the association model .*\['new'\]"):
        bare.postprocess_nodes([*nodes(), new, with_vector], query_bundle=bundle)


def test_empty_input_and_missing_query(model_path):
    rerank = AssociationRerank(model_path=model_path)
    assert rerank.postprocess_nodes([], query_str=QUESTION) == []
    with pytest.raises(ValueError, match="Missing query bundle"):
        rerank.postprocess_nodes(nodes())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"top_n": 0}, "top_n\n  Input should be greater than 0"),
        ({"lambda_": 1.5}, r"lambda_ must be in \[0, 1\], got 1.5"),
        ({"mode": "both"}, r"mode must be one of \['mixed', 'reverse'\], got 'both'"),
        ({"first_stage_margin": -0.5}, "first_stage_margin must be a finite number >= 0"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AssociationRerank(model_path="unused", **kwargs)


def test_settings_round_trip_without_the_embed_model(model_path):
    rerank = AssociationRerank(
        model_path=model_path,
        top_n=4,
        lambda_=0.3,
        mode="reverse",
        first_stage_margin=0.01,
        embed_model=HashingEmbedding(),
    )
    data = rerank.to_dict()
    assert data == {
        "model_path": model_path,
        "index_path": None,
        "top_n": 4,
        "lambda_": 0.3,
        "mode": "reverse",
        "first_stage_margin": 0.01,
        "id_key": None,
        "class_name": "AssociationRerank",
    }
    again = AssociationRerank.from_dict(data)
    assert again.to_dict() == data and again.embed_model is None


def test_in_a_vector_index_query_where_nodes_come_back_without_embeddings(model_path):
    text_nodes = [TextNode(id_=pid, text=text) for pid, text in TEXTS.items()]
    index = VectorStoreIndex(text_nodes, embed_model=HashingEmbedding())
    retrieved = index.as_retriever(similarity_top_k=6).retrieve(QUESTION)
    assert all(n.node.embedding is None for n in retrieved)
    reranked = AssociationRerank(
        model_path=model_path, top_n=2, mode="reverse", embed_model=HashingEmbedding()
    ).postprocess_nodes(retrieved, query_str=QUESTION)
    assert len(reranked) == 2
    assert all(n.node.metadata[SIGNALS_KEY]["retrieval_score"] > 0 for n in reranked)


def test_falls_back_to_settings_embed_model_in_postprocess_nodes(model_path, settings_embed_model):
    plain = AssociationRerank(model_path=model_path, top_n=3)
    explicit = AssociationRerank(model_path=model_path, top_n=3, embed_model=HashingEmbedding())
    got = plain.postprocess_nodes(nodes(), query_str=QUESTION)
    assert [(n.node.node_id, n.score) for n in got] == [
        (n.node.node_id, n.score) for n in explicit.postprocess_nodes(nodes(), query_str=QUESTION)
    ]


def test_unset_settings_embed_model_is_never_resolved_to_its_lazy_default(
    model_path, unset_settings_embed_model
):
    plain = AssociationRerank(model_path=model_path, top_n=3)
    with pytest.raises(ValueError, match="needs an embed model for the query: pass embed_model"):
        plain.postprocess_nodes(nodes(), query_str=QUESTION)
    assert unset_settings_embed_model.calls == []  # OpenAIEmbedding was never built


def test_works_in_a_condense_plus_context_chat_engine(model_path, settings_embed_model):
    from llama_index.core.chat_engine import CondensePlusContextChatEngine
    from llama_index.core.llms import MockLLM

    index = VectorStoreIndex([TextNode(id_=pid, text=text) for pid, text in TEXTS.items()])
    rerank = AssociationRerank(model_path=model_path, top_n=2)
    engine = CondensePlusContextChatEngine.from_defaults(
        index.as_retriever(similarity_top_k=6), llm=MockLLM(), node_postprocessors=[rerank]
    )
    response = engine.chat(QUESTION)
    assert len(response.source_nodes) == 2
    assert all("association" in n.node.metadata[SIGNALS_KEY] for n in response.source_nodes)


def test_id_key_maps_store_node_ids_to_trained_ids_and_unknown_texts_embed_once(model_path, caplog):
    class CountingEmbedding(HashingEmbedding):
        texts: list[str] = []  # noqa: RUF012 - a pydantic field: copied per instance

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            self.texts.extend(texts)
            return [self._get_text_embedding(t) for t in texts]

    def passage_texts_embedded() -> int:  # the encoder check also embeds the probe texts
        return sum(text in TEXTS.values() for text in embed_model.texts)

    uuid_nodes = [
        NodeWithScore(
            node=TextNode(id_=f"uuid-{i}", text=TEXTS[pid], metadata={"doc_id": pid}),
            score=1.0 - i / 10,
        )
        for i, pid in enumerate(TEXTS)
    ]
    embed_model = CountingEmbedding()
    keyed = AssociationRerank(
        model_path=model_path, top_n=3, id_key="doc_id", embed_model=embed_model
    )
    by_id = AssociationRerank(model_path=model_path, top_n=3, embed_model=embed_model)
    expected = [n.node.node_id for n in by_id.postprocess_nodes(nodes(), query_str=QUESTION)]
    got = keyed.postprocess_nodes(uuid_nodes, query_str=QUESTION)
    assert [n.node.metadata["doc_id"] for n in got] == expected and passage_texts_embedded() == 0
    unkeyed = AssociationRerank(model_path=model_path, top_n=3, embed_model=embed_model)
    with caplog.at_level("WARNING"):
        for _ in range(3):
            unkeyed.postprocess_nodes(uuid_nodes, query_str=QUESTION)
    assert passage_texts_embedded() == len(TEXTS)  # each unknown text once, then remembered
    warnings = [r for r in caplog.records if "not in the association model" in r.message]
    assert len(warnings) == 1 and "id_key" in warnings[0].message


def test_id_key_shared_by_chunks_of_one_document_is_named(model_path):
    chunks = [
        NodeWithScore(node=TextNode(id_=f"c{i}", text=text, metadata={"doc_id": "rope"}))
        for i, text in enumerate(TEXTS["rope"].split(" by "))
    ]
    keyed = AssociationRerank(
        model_path=model_path, top_n=3, id_key="doc_id", embed_model=HashingEmbedding()
    )
    with pytest.raises(ValueError, match=r"metadata\['doc_id'\].*'rope' by \['c0', 'c1'\]"):
        keyed.postprocess_nodes(chunks, query_str=QUESTION)


class ShiftedEmbedding(HashingEmbedding):
    """Another model of the same dimension: words hash to other buckets."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return np.roll(hashing_vectors([query], self.dim)[0], 3).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return np.roll(hashing_vectors([text], self.dim)[0], 3).tolist()


def test_the_embed_model_is_checked_by_the_saved_fingerprint(model_path):
    renamed = HashingEmbedding(model_name="my-own-name-for-the-same-model")
    kept = AssociationRerank(model_path=model_path, top_n=2, embed_model=renamed)
    assert len(kept.postprocess_nodes(nodes(), query_str=QUESTION)) == 2
    refused = AssociationRerank(model_path=model_path, top_n=2, embed_model=ShiftedEmbedding())
    with pytest.raises(ValueError, match=r"given encoder 'unknown' \(also dim 64\) is a different"):
        refused.postprocess_nodes(nodes(), query_str=QUESTION)


def test_a_model_saved_without_fingerprint_compares_names_and_says_so(tmp_path, caplog):
    vectors = HashingEncoder(DIM).encode(list(TEXTS.values()))
    old = AssociationReranker(training=TrainingConfig(epochs=2, batch_size=8, seed=0))
    path = old.fit(list(TEXTS), vectors, [("rope", "marit")], encoder_name="hashing-test")
    path = str(path.save(tmp_path / "old"))
    with pytest.raises(ValueError, match="no encoder fingerprint .* only names can be compared"):
        AssociationRerank(model_path=path, embed_model=HashingEmbedding()).postprocess_nodes(
            nodes(), query_str=QUESTION
        )
    same_name = HashingEmbedding(model_name="hashing-test")
    with caplog.at_level("WARNING"):
        AssociationRerank(model_path=path, embed_model=same_name).postprocess_nodes(
            nodes(), query_str=QUESTION
        )
    assert "accepted by its name only" in caplog.text


def test_bundled_minilm_under_another_name_is_the_same_model(minilm_embedding, tmp_path):
    from llama_index.embeddings.rag_multihop import RagMultihopEmbedding

    encoder = minilm_embedding.encoder
    reranker = AssociationReranker(encoder=encoder, training=TrainingConfig(epochs=2, seed=0))
    reranker.fit(list(TEXTS), encoder.encode(list(TEXTS.values())), [("rope", "marit")])
    path = str(reranker.save(tmp_path / "minilm"))
    by_path = RagMultihopEmbedding(model_name=encoder.model_name_or_path)
    assert by_path.model_name != minilm_embedding.model_name
    found = AssociationRerank(model_path=path, top_n=2, embed_model=by_path).postprocess_nodes(
        nodes(), query_str=QUESTION
    )
    assert len(found) == 2
    same_dim = AssociationRerank(model_path=path, embed_model=HashingEmbedding(dim=384))
    with pytest.raises(ValueError, match=r"\(also dim 384\) is a different model"):
        same_dim.postprocess_nodes(nodes(), query_str=QUESTION)


def test_from_a_corpus_index_sidecar_it_ranks_like_the_saved_model_and_sees_later_passages(
    model_path, tmp_path
):
    from rag_multihop.association.indexed import AssociationSidecar
    from rag_multihop.store import CorpusIndex

    encoder = HashingEncoder(DIM)
    first = list(TEXTS)[:4]
    index = CorpusIndex.build(
        tmp_path / "idx",
        [Passage(pid, TEXTS[pid]) for pid in first],
        encoder.encode([TEXTS[pid] for pid in first]),
    )
    index.attach_sidecar(AssociationSidecar.of(AssociationReranker.load(model_path)))
    served = AssociationRerank(index_path=str(tmp_path / "idx"), top_n=3)
    saved = AssociationRerank(model_path=model_path, top_n=3, embed_model=HashingEmbedding())
    query = QueryBundle(QUESTION, embedding=encoder.encode([QUESTION])[0].tolist())

    def ranked(rerank, ids):
        return [
            (n.node.node_id, round(n.score, 6)) for n in rerank.postprocess_nodes(nodes(ids), query)
        ]

    assert ranked(served, first) == ranked(saved, first)
    index.add([Passage("capital", TEXTS["capital"])], encoder.encode([TEXTS["capital"]]))
    assert ranked(served, [*first, "capital"]) == ranked(saved, [*first, "capital"])
    assert served._load().stores("capital")  # reopened: its f(p) written by the index
    with pytest.raises(ValueError, match="exactly one of model_path and index_path"):
        AssociationRerank(top_n=3)
