"""Bad passages and bad vectors fail where they enter, naming the passage and the field:
``Passage`` checks its fields' types; vectors of different lengths name the first offending
id and both dimensions (never numpy's "inhomogeneous shape"); NaN/inf rows name their ids."""

from __future__ import annotations

import numpy as np
import pytest

from rag_multihop import Passage
from rag_multihop.corpus import Corpus
from rag_multihop.index.dense import DenseIndex
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.validation import as_embedding_matrix
from rag_multihop.vectors import PassageVectors


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"title": None}, r"Passage.title of passage 'p1' must be a string \(.*got NoneType None"),
        ({"title": 3}, r"Passage.title of passage 'p1' must be a string .*got int 3"),
        ({"text": None}, r"Passage.text of passage 'p1' must be a string .*got NoneType"),
        ({"text": b"bytes"}, r"Passage.text of passage 'p1' must be a string .*got bytes"),
        ({"metadata": [("a", 1)]}, r"Passage.metadata of passage 'p1' must be a mapping"),
        ({"metadata": {1: "x"}}, r"Passage.metadata of passage 'p1' must have string keys"),
    ],
)
def test_a_passage_checks_its_fields_when_built(kwargs: dict, message: str) -> None:
    fields = {"id": "p1", "text": "Paris is in France.", **kwargs}
    with pytest.raises(ValueError, match=message):
        Passage(**fields)


def test_a_passage_without_title_or_metadata_is_still_fine() -> None:
    passage = Passage("p1", "Paris is in France.", metadata=None)  # type: ignore[arg-type]
    assert passage.title == "" and dict(passage.metadata) == {}
    with pytest.raises(ValueError, match="Passage.id must be a non-empty string, got 7"):
        Passage(7, "text")  # type: ignore[arg-type]


def _corpus(n: int = 3) -> Corpus:
    return Corpus(Passage(f"d{i}", f"Passage number {i}.", title=f"T{i}") for i in range(n))


RAGGED = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0]]
BOTH_DIMS = r"'d2' has dimension 2, the first \('d0'\) has dimension 3"


def test_vectors_of_different_lengths_name_the_id_and_both_dimensions() -> None:
    with pytest.raises(ValueError, match=BOTH_DIMS):
        as_embedding_matrix(RAGGED, ids=["d0", "d1", "d2"])
    with pytest.raises(ValueError, match=r"row 2 has dimension 2, the first \(row 0\)"):
        as_embedding_matrix(RAGGED)
    with pytest.raises(ValueError, match=r"'d1' has no vector"):
        as_embedding_matrix([[1.0], None], ids=["d0", "d1"])


def test_core_builders_name_the_passage_with_the_other_dimension() -> None:
    corpus = _corpus()
    with pytest.raises(ValueError, match=BOTH_DIMS):
        MultiHopRetriever(corpus, RAGGED)
    with pytest.raises(ValueError, match=BOTH_DIMS):
        DenseIndex.build(corpus.ids, RAGGED)  # type: ignore[arg-type]
    given = dict(zip(corpus.ids, RAGGED, strict=True))
    with pytest.raises(ValueError, match=BOTH_DIMS):
        PassageVectors().passages(list(corpus), given=given)


def test_non_finite_vectors_name_their_ids() -> None:
    corpus = _corpus()
    vectors = np.eye(3, dtype=np.float32)
    vectors[1, 0] = np.inf
    with pytest.raises(
        ValueError, match=r"NaN or inf values \(rows \[1\], ids \['d1'\], 1 in all\)"
    ):
        MultiHopRetriever(corpus, vectors)
    given = {"d0": [1.0, 0.0], "d1": [float("nan"), 1.0]}
    with pytest.raises(ValueError, match=r"NaN or inf values \(rows \[1\], ids \['d1'\]"):
        PassageVectors().passages(list(_corpus(2)), given=given)
