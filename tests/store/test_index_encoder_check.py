"""Query-time callers of a persistent index refuse an encoder that is not the index's model
(by fingerprint), naming both models; the index's own model and indexes without a recorded
fingerprint are accepted."""

from __future__ import annotations

import pytest

from rag_multihop import Query
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from rag_multihop.store.encoder_check import check_index_encoder
from rag_multihop.store.methods import dense_retriever
from tests.store.encoders import ShuffledEncoder


class _Counting:
    """The hashing encoder, counting the texts it embeds."""

    def __init__(self, base) -> None:
        self.base, self.texts = base, 0
        self.name, self.dim = base.name, base.dim

    def encode(self, texts, *, show_progress=False):
        self.texts += len(texts)
        return self.base.encode(texts)


@pytest.fixture
def snapshot(tmp_path, polish_wedding, hashing_encoder):
    vectors = hashing_encoder.encode([p.embedding_text for p in polish_wedding])
    index = CorpusIndex.build(tmp_path / "idx", polish_wedding, vectors, encoder=hashing_encoder)
    return index.snapshot()


MISMATCH = r"encoder 'shuffled' is not the model the index .*idx was built with \('hashing-test'\)"


def test_every_query_time_caller_refuses_another_model(snapshot, hashing_encoder) -> None:
    other = ShuffledEncoder(hashing_encoder)
    with pytest.raises(ValueError, match=MISMATCH):
        MultiHopRetriever.from_index(snapshot, encoder=other)
    with pytest.raises(ValueError, match=MISMATCH):
        dense_retriever(snapshot, other)
    with pytest.raises(ValueError, match=MISMATCH):
        graph_fusion_retriever(snapshot, encoder=other)


def test_the_index_model_is_accepted_and_checked_once(snapshot, hashing_encoder) -> None:
    encoder = _Counting(hashing_encoder)
    retriever = MultiHopRetriever.from_index(snapshot, encoder=encoder)
    probes = encoder.texts
    assert probes > 0
    graph_fusion_retriever(snapshot, encoder=encoder)
    dense_retriever(snapshot, encoder)
    assert encoder.texts == probes  # remembered: reopening for every query costs nothing
    assert retriever.retrieve(Query("Who directed Polish Wedding?"), k=2)


def test_an_index_without_a_fingerprint_checks_the_dimension(
    tmp_path, polish_wedding, hashing_encoder
) -> None:
    vectors = hashing_encoder.encode([p.embedding_text for p in polish_wedding])
    snapshot = CorpusIndex.build(tmp_path / "plain", polish_wedding, vectors).snapshot()
    MultiHopRetriever.from_index(snapshot, encoder=ShuffledEncoder(hashing_encoder))
    narrow = ShuffledEncoder(hashing_encoder)
    narrow.dim = 8
    with pytest.raises(ValueError, match="encoder 'shuffled' has dimension 8; the index .*plain"):
        check_index_encoder(snapshot.manifest, narrow, where=snapshot.root)
