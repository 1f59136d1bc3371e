"""A first segment built in parts (one per unit of input, as numpy arrays, merged by the
driver) equals the in-process batch plan's arrays, array by array and dtype by dtype, for
any split into units, titled and untitled; the parts survive a round trip through .npy
files memory-mapped back."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.views import opaque_name
from rag_multihop.graph.extract import HeuristicExtractor
from rag_multihop.store import IndexSettings
from rag_multihop.store.batches import build_arrays, passage_batch
from rag_multihop.store.parts import (
    entries,
    link_part,
    merge_parts,
    name_dictionary,
    read_part,
)
from rag_multihop.testing import polish_wedding_passages


def _vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _in_parts(passages, vectors, cuts, settings, folder=None):
    """The plan as an engine runs it: pass 1 per unit, the dictionary of every unit's
    entries, pass 2 per unit, the merge (parts saved and memory-mapped when ``folder``)."""
    units = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    read = [
        read_part(
            passage_batch(passages[a:b]),
            vectors[a:b],
            subjects=settings.subjects,
            extractor=HeuristicExtractor(),
            batch_size=3,
        )
        for a, b in units
    ]
    dictionary = name_dictionary([entries(part) for part in read], settings)
    parts = [
        part | link_part(part["texts.blob"], part["texts.off"], a, dictionary)
        for part, (a, _) in zip(read, units, strict=True)
    ]
    if folder is not None:
        for number, part in enumerate(parts):
            for name, array in part.items():
                np.save(folder / f"{number}.{name}.npy", array)
        parts = [
            {name: np.load(folder / f"{number}.{name}.npy", mmap_mode="r") for name in part}
            for number, part in enumerate(parts)
        ]
    return merge_parts(parts)


def _assert_same(found, expected) -> None:
    assert sorted(found) == sorted(expected)
    for name in expected:
        assert found[name].dtype == expected[name].dtype, name
        assert found[name].shape == expected[name].shape, name
        assert np.array_equal(found[name], expected[name]), name


@pytest.mark.parametrize("cuts", [[0, 100], [0, 1, 2, 100], [0, 7, 7, 13, 100]])
def test_parts_merge_to_the_in_process_arrays(cuts) -> None:
    found = polish_wedding_passages()
    passages = [*found, *(Passage(f"u{i}", p.text, "") for i, p in enumerate(found))]
    cuts = [min(c, len(passages)) for c in cuts]
    vectors = _vectors(len(passages))
    expected = build_arrays(passages, vectors, IndexSettings(), HeuristicExtractor())
    _assert_same(_in_parts(passages, vectors, cuts, IndexSettings()), expected)
    assert len(expected["link.dst"]) > 0 and len(expected["glink.dst"]) > 0


@pytest.mark.parametrize("titled", [True, False])
def test_parts_of_a_2wiki_slice_saved_and_memory_mapped(tmp_path, shared_datasets, titled):
    corpus = list(load_named("2wiki", shared_datasets).corpus)[:240]
    passages = [
        Passage(p.id, p.text, p.title if titled else opaque_name(p.title, 0)) for p in corpus
    ]
    vectors = _vectors(len(passages))
    settings = IndexSettings()
    expected = build_arrays(passages, vectors, settings, HeuristicExtractor())
    found = _in_parts(passages, vectors, [0, 50, 51, 170, 240], settings, folder=tmp_path)
    _assert_same(found, expected)
    assert len(np.unique(expected["ment.ent"])) > 100  # entities shared across units


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_shards_read_in_row_slices_by_build_workers_merge_to_the_in_process_arrays(
    tmp_path, kind
) -> None:
    """What each Ray actor (and the driver while Ray starts) does, without Ray: read its
    units' slices of the shards with pyarrow, pass 1, the dictionary of every unit's
    entries, pass 2 written as .npy parts, merged from memory maps."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from rag_multihop.store.ray_build import BuildWorker, load_part, plan_units

    found = polish_wedding_passages()
    passages = [*found, *(Passage(f"u{i}", p.text, "") for i, p in enumerate(found))]
    vectors = _vectors(len(passages)) * 3.0  # not unit rows: the workers normalise
    files = []
    for number, (a, b) in enumerate([(0, 9), (9, len(passages))]):
        rows = {
            "id": [p.id for p in passages[a:b]],
            "text": [p.text for p in passages[a:b]],
            "title": [p.title for p in passages[a:b]],
            "vector": [v.tolist() for v in vectors[a:b]],
        }
        files.append(str(tmp_path / f"part-{number}.{kind}"))
        if kind == "parquet":
            pq.write_table(pa.table(rows), files[-1])
        else:
            with open(files[-1], "w", encoding="utf-8") as handle:
                for i in range(b - a):
                    handle.write(json.dumps({k: v[i] for k, v in rows.items()}) + "\n")
    units = plan_units(files, workers=2)
    assert len(units) == 8 and {u.pieces for u in units} == {4}
    settings = IndexSettings()
    workers = [
        BuildWorker(
            "parquet" if kind == "parquet" else "json",
            None,
            settings,
            HeuristicExtractor(),
            None,
            4,
            str(tmp_path / "parts"),
        )
        for _ in range(2)
    ]
    owner = {u.number: workers[u.number % 2] for u in units}
    read = [owner[u.number].read(u)[0] for u in units]
    counts = [int(e["rows"][0]) for e in read]
    assert sum(counts) == len(passages)
    firsts = np.cumsum([0, *counts[:-1]]).tolist()
    for unit in units:
        owner[unit.number].link(unit.number, firsts[unit.number], read)
    merged = merge_parts([load_part(tmp_path / "parts", u.number) for u in units])
    unit_rows = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = build_arrays(passages, unit_rows, settings, HeuristicExtractor())
    _assert_same(merged, expected)
