"""Passage texts stored deflated (rag_multihop.store.texts): byte-exact round trips, and an
index whose segments hold them deflated serves exactly what one holding them plain does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag_multihop import Passage, Query
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from rag_multihop.store import texts as stored_texts
from rag_multihop.store.tables import pack_strings
from rag_multihop.store.texts import compress_texts, text_at

ODD = [
    "",
    "x",
    "Rope is a 1948 film directed by Alfred Hitchcock.",
    "a\x00b\x1fc\u2028d \U0001f600\u200d\U0001f469 Café \u0301",
    "Vertigo " * 5000,  # 40 KB, longer than the dictionary
]


def test_texts_come_back_byte_exact_and_smaller() -> None:
    rng = random.Random(0)
    words = [
        "film",
        "director",
        "born",
        "city",
        "river",
        "the",
        "of",
        "in",
        "was",
        "is",
        "a",
        "by",
        "and",
    ]
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(300)] + ODD
    blob, offsets = pack_strings(texts)
    arrays = compress_texts(blob, offsets, min_bytes=0)
    assert [text_at(arrays, i) for i in range(len(texts))] == texts
    assert arrays["texts.z"].nbytes < blob.nbytes / 3
    plain = compress_texts(blob, offsets, min_bytes=blob.nbytes + 1)
    assert sorted(plain) == ["texts.blob", "texts.off"]
    assert [text_at(plain, i) for i in range(len(texts))] == texts
    again = compress_texts(blob, offsets, min_bytes=0)  # deterministic: the same bytes
    assert all(np.array_equal(again[k], arrays[k]) for k in arrays)


def _corpus(n: int) -> tuple[list[Passage], np.ndarray]:
    rng = np.random.default_rng(0)
    titles = [f"Film {i}" for i in range(n)]
    passages = [
        Passage(
            f"p{i}",
            f"{titles[i]} is a film by Director {i % 7}. It was remade as {titles[(i * 3) % n]}."
            + (" " + ODD[i % len(ODD)] if i % 9 == 0 else ""),
            titles[i],
        )
        for i in range(n)
    ]
    vectors = rng.normal(size=(n, 16)).astype(np.float32)
    return passages, vectors


def _served(snapshot, queries) -> list[list[tuple[str, float]]]:
    multihop = MultiHopRetriever.from_index(snapshot)
    fusion = graph_fusion_retriever(snapshot)
    return [
        [(c.id, round(c.score, 9)) for c in method.retrieve(q, k=10)]
        for q in queries
        for method in (multihop, fusion)
    ]


def _write(path, passages, vectors) -> CorpusIndex:
    """A build, an add, a delete and an upsert: segments of every kind."""
    index = CorpusIndex.build(path, passages[:150], vectors[:150], merge=None)
    index.add(passages[150:], vectors[150:])
    index.delete([p.id for p in passages[::10]])
    index.upsert(passages[5:8], vectors[5:8])
    return index


def test_an_index_with_deflated_texts_serves_what_a_plain_one_does(tmp_path, monkeypatch) -> None:
    passages, vectors = _corpus(200)
    rng = np.random.default_rng(1)
    queries = [
        Query(f"Who directed the film remade as Film {i}?", embedding=rng.normal(size=16))
        for i in range(0, 200, 17)
    ]
    plain = _write(tmp_path / "plain", passages, vectors)
    monkeypatch.setattr(stored_texts, "MIN_BYTES", 0)
    deflated = _write(tmp_path / "deflated", passages, vectors)

    manifest = deflated.manifest()
    assert all(
        "texts.z" in s["files"] and "texts.blob" not in s["files"] for s in manifest["segments"]
    )
    assert all("texts.blob" in s["files"] for s in plain.manifest()["segments"])
    assert not list((tmp_path / "deflated" / "segments").rglob("texts.blob.npy"))
    snapshot = CorpusIndex(tmp_path / "deflated").snapshot()
    expected = CorpusIndex(tmp_path / "plain").snapshot()
    assert [(p.id, p.text, p.title) for p in snapshot.corpus] == [
        (p.id, p.text, p.title) for p in expected.corpus
    ]
    assert _served(snapshot, queries) == _served(expected, queries)

    deflated.compact()  # rewritten from the deflated texts
    compacted = CorpusIndex(tmp_path / "deflated").snapshot()
    assert [p.text for p in compacted.corpus] == [p.text for p in expected.corpus]
    assert _served(compacted, queries) == _served(expected, queries)


def test_a_small_write_keeps_its_texts_plain(tmp_path) -> None:
    passages, vectors = _corpus(20)
    index = CorpusIndex.build(tmp_path / "idx", passages, vectors)
    [segment] = index.manifest()["segments"]
    assert "texts.blob" in segment["files"] and "texts.z" not in segment["files"]
    assert index.manifest()["format_version"] == 6


@pytest.mark.parametrize("texts", [["only one"], ["", ""]])
def test_degenerate_columns_round_trip(texts) -> None:
    arrays = compress_texts(*pack_strings(texts), min_bytes=0)
    assert [text_at(arrays, i) for i in range(len(texts))] == texts
