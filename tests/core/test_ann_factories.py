"""A dense index reports the index it built (``Flat`` when its vectors were too few to
train the one asked for), and factory strings FAISS parses but that cannot be built here
are refused up front, naming the factory and why."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rag_multihop.index.ann import check_ann, make_ann_index
from rag_multihop.index.dense import DenseIndex

pytest.importorskip("faiss")


def _unit(rows: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _ids(rows: int) -> list[str]:
    return [f"p{i}" for i in range(rows)]


@pytest.mark.parametrize(
    ("factory", "rows", "built"),
    [
        ("IVF4,Flat", 3, "Flat"),
        ("IVF4,Flat", 300, "IVF4,Flat"),
        ("PQ4x4", 10, "Flat"),
        ("auto", 5, "Flat"),
        ("flat", 5, "Flat"),
        ("HNSW8", 5, "HNSW8"),
    ],
)
def test_dense_index_reports_the_factory_it_built(
    tmp_path, factory: str, rows: int, built: str
) -> None:
    index = DenseIndex.build(_ids(rows), _unit(rows), factory=factory)
    assert (index.factory, index.requested_factory) == (built, factory)
    index.save(tmp_path / "index")
    loaded = DenseIndex.load(tmp_path / "index")
    assert (loaded.factory, loaded.requested_factory) == (built, factory)
    assert index.search(_unit(1, seed=1), 3)[1] == loaded.search(_unit(1, seed=1), 3)[1]


REFUSED = {
    "IDMap,Flat": "an IDMap takes its rows with ids",
    "IDMap2,Flat": "an IDMap takes its rows with ids",
    "IDMap,IVF4,Flat": "an IDMap takes its rows with ids",
    "IVF4(IDMap,Flat),Flat": "an IDMap takes its rows with ids",
    "NSG32,Flat": "FAISS builds an NSG graph once",
    "NSG8": "FAISS builds an NSG graph once",
    "IVF4(RCQ2x2),Flat": "its coarse quantizer makes 16 lists, not the 4 of IVF4",
}


@pytest.mark.parametrize(("factory", "why"), REFUSED.items())
def test_factories_that_cannot_be_built_are_refused_up_front(factory: str, why: str) -> None:
    message = f"ann {factory!r} cannot be built here: {why}"
    with pytest.raises(ValueError, match=re.escape(message)):
        check_ann(factory)
    with pytest.raises(ValueError, match="cannot be built here"):
        check_ann(factory, dim=16)
    for rows in (1, 5, 300):
        with pytest.raises(ValueError, match="cannot be built here"):
            make_ann_index(_unit(rows), factory)
        with pytest.raises(ValueError, match="cannot be built here"):
            DenseIndex.build(_ids(rows), _unit(rows), factory=factory)


@pytest.mark.parametrize("rows", [1, 5, 20, 40, 300])
def test_an_rcq_quantizer_too_few_rows_to_train_falls_back_to_exact(rows: int) -> None:
    """``RCQ2x2`` trains on at least the vectors' dimension (32) rows, more than its 16 lists."""
    vectors = _unit(rows, dim=32)
    index = DenseIndex.build(_ids(rows), vectors, factory="IVF16(RCQ2x2),Flat")
    assert index.factory == ("Flat" if rows < 32 else "IVF16(RCQ2x2),Flat")
    _, found = index.search(vectors[:1], 1)
    assert found == [["p0"]]
