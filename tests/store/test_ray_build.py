"""The Ray build (``index build --engine ray``) writes the index the in-process build
writes: a local Ray with two workers over a 300-passage slice of the 2Wiki corpus, from
JSON Lines shards (titled) and Parquet shards through the CLI (untitled: the passages known
by the subjects read from their text), compared array by array and ranking by ranking."""

from __future__ import annotations

import itertools
import json
import random
import sys

import numpy as np
import pytest

from rag_multihop import Passage, Query
from rag_multihop.cli import main
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.views import opaque_name
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.store import CorpusIndex, graph_fusion_retriever
from rag_multihop.store.segment import (
    SEGMENTS,
    current_manifest_path,
    read_arrays,
    read_manifest,
    read_segment,
)

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'rag-multihop[ray]'")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from rag_multihop.store.ray_build import build_with_ray  # noqa: E402

SIZE = 300


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (two CPUs: two workers) for the module; the builds reuse it."""
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def slice_2wiki(shared_datasets, hashing_encoder_module):
    """300 passages (the gold of the first 30 questions, then others), their vectors and
    the questions."""
    dataset = load_named("2wiki", shared_datasets)
    questions = dataset.questions[:30]
    gold = list(dict.fromkeys(pid for q in questions for pid in q.gold_ids))
    rest = sorted(set(dataset.corpus.ids) - set(gold))
    ids = gold + random.Random(0).sample(rest, SIZE - len(gold))
    passages = [Passage(p.id, p.text, p.title) for p in (dataset.corpus[i] for i in ids)]
    vectors = hashing_encoder_module.encode([p.embedding_text for p in passages])
    vectors += np.random.default_rng(0).normal(0, 1e-3, vectors.shape).astype(np.float32)
    return passages, vectors, [q.question for q in questions]


@pytest.fixture(scope="module")
def hashing_encoder_module():
    from rag_multihop.testing import HashingEncoder

    return HashingEncoder()


def _write_jsonl(folder, passages, vectors, parts=2):
    folder.mkdir()
    cuts = np.linspace(0, len(passages), parts + 1).astype(int)
    for part, (a, b) in enumerate(itertools.pairwise(cuts.tolist())):
        with open(folder / f"part-{part}.jsonl", "w", encoding="utf-8") as handle:
            for p, v in zip(passages[a:b], vectors[a:b], strict=True):
                record = {"id": p.id, "text": p.text, "title": p.title, "vector": v.tolist()}
                handle.write(json.dumps(record) + "\n")


def _layout_free(files):
    """A manifest's array specs without where each array is stored (the Ray engine's first
    segment is written whole, packed in one file; the in-process build streams files)."""
    return {key: {k: v for k, v in spec.items() if k != "at"} for key, spec in files.items()}


def _assert_same_index(built, expected) -> None:
    """Same manifest (but the build time, segment names and storage), same arrays."""
    found = read_manifest(current_manifest_path(built))
    wanted = read_manifest(current_manifest_path(expected))
    entries = found.pop("segments"), wanted.pop("segments")
    found.pop("created"), wanted.pop("created")
    served = found.pop("serving"), wanted.pop("serving")
    assert found == wanted
    assert served[0]["files"] == served[1]["files"]
    left, right = (
        read_arrays(root / SEGMENTS / s["name"], s["files"])
        for root, s in zip((built, expected), served, strict=True)
    )
    for name in served[1]["files"]:
        assert np.array_equal(left[name], right[name]), name
    assert [_layout_free(e["files"]) for e in entries[0]] == [
        _layout_free(e["files"]) for e in entries[1]
    ]
    for a, b in zip(*entries, strict=True):
        left, right = read_segment(built, a), read_segment(expected, b)
        for name in b["files"]:
            assert np.array_equal(np.asarray(left[name]), np.asarray(right[name])), name


def _rankings(snapshot, questions, encoder):
    out = []
    for retriever in (
        MultiHopRetriever.from_index(snapshot, encoder=encoder),
        graph_fusion_retriever(snapshot, encoder=encoder),
    ):
        for text in questions:
            query = Query(text, embedding=encoder.encode([text])[0])
            out.append([(c.id, round(c.score, 9)) for c in retriever.retrieve(query, k=10)])
    return out


def test_ray_build_from_jsonl_shards_equals_the_in_process_build(
    tmp_path, local_ray, slice_2wiki, hashing_encoder_module
) -> None:
    passages, vectors, questions = slice_2wiki
    _write_jsonl(tmp_path / "shards", passages, vectors)
    seen = []
    switch_interval = sys.getswitchinterval()
    built = build_with_ray(
        tmp_path / "ray.idx",
        [str(tmp_path / "shards" / "*.jsonl")],
        workers=2,
        batch_size=64,
        progress=lambda *args: seen.append(args),
    )
    expected = CorpusIndex.build(tmp_path / "local.idx", passages, vectors)
    _assert_same_index(built.path, expected.path)
    snapshot = built.snapshot()
    assert snapshot.link_graph.n_links > 20  # the slice links: the check is not vacuous
    assert _rankings(snapshot, questions, hashing_encoder_module) == _rankings(
        expected.snapshot(), questions, hashing_encoder_module
    )
    assert seen[-1] == ("find links", SIZE, SIZE)
    assert ("read names", SIZE, 0) in seen
    # the build shortens the thread switch interval while it works, and puts it back
    assert sys.getswitchinterval() == switch_interval


def test_cli_ray_build_from_parquet_shards_of_untitled_passages(
    tmp_path, local_ray, slice_2wiki, capsys
) -> None:
    passages, vectors, _ = slice_2wiki
    untitled = [Passage(p.id, p.text, opaque_name(p.title, 0)) for p in passages]
    shards = tmp_path / "shards"
    shards.mkdir()
    for part, (a, b) in enumerate([(0, 120), (120, SIZE)]):
        table = pa.table(
            {
                "id": [p.id for p in untitled[a:b]],
                "text": [p.text for p in untitled[a:b]],
                "title": [p.title for p in untitled[a:b]],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors[a:b].reshape(-1)), vectors.shape[1]
                ),
            }
        )
        pq.write_table(table, shards / f"part-{part}.parquet")
    code = main(
        [
            "index",
            "build",
            "--index",
            str(tmp_path / "ray.idx"),
            "--engine",
            "ray",
            "--input",
            str(shards),
            "--workers",
            "2",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["passages"] == SIZE
    expected = CorpusIndex.build(tmp_path / "local.idx", untitled, vectors)
    _assert_same_index(tmp_path / "ray.idx", expected.path)
    assert len(expected.snapshot().subject_rows) > SIZE // 2


def test_ray_build_names_a_missing_column(tmp_path, local_ray) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "a.jsonl").write_text(json.dumps({"id": "p1", "body": "text"}) + "\n")
    with pytest.raises(Exception, match=r"input shards need a 'text' column"):
        build_with_ray(tmp_path / "idx", [str(shards / "a.jsonl")], workers=2)


def test_ray_build_reads_a_null_title_as_none(tmp_path, local_ray) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    records = [
        {"id": "p1", "text": "Rope is a film.", "title": None, "vector": [1.0, 0.0]},
        {"id": "p2", "text": "Psycho is a film.", "title": "Psycho", "vector": [0.0, 1.0]},
    ]
    (shards / "a.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    built = build_with_ray(tmp_path / "idx", [str(shards / "a.jsonl")], workers=2)
    assert [p.title for p in built.snapshot().corpus] == ["", "Psycho"]


def test_parts_come_back_through_the_object_store_when_workers_cannot_reach_the_disk(
    tmp_path, local_ray, slice_2wiki, monkeypatch
) -> None:
    """On a cluster the actors return their parts and the driver writes them: forced here
    on the local Ray, the index is the same."""
    from rag_multihop.store import ray_build

    monkeypatch.setattr(ray_build, "_on_this_machine", lambda ray: False)
    passages, vectors, _ = slice_2wiki
    _write_jsonl(tmp_path / "shards", passages, vectors, parts=3)
    built = build_with_ray(tmp_path / "ray.idx", [str(tmp_path / "shards")], workers=2)
    expected = CorpusIndex.build(tmp_path / "local.idx", passages, vectors)
    _assert_same_index(built.path, expected.path)
    assert not list(tmp_path.glob(".ray-parts-*"))  # the scratch folder is removed
