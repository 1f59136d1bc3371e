"""The one place a FAISS index is made from an ANN setting: ``"auto"``, ``"flat"`` or a factory.

- ``"auto"`` (the default of the in-memory retrievers): exact search (``Flat``) below
  :data:`AUTO_FLAT_LIMIT` passages, ``"HNSW32"`` from there on, so query cost stops growing
  linearly with the corpus where exact search gets slow;
- ``"flat"`` / ``"Flat"``: exact inner product, whatever the size;
- any FAISS factory string (``"HNSW32"``, ``"IVF1024,Flat"``, ``"HNSW32,SQ8"``, ...).

``ef_search`` sets HNSW's search breadth (FAISS ``efSearch``; higher is more exact and
slower); it is ignored by indexes without one.

Example:
    >>> import numpy as np
    >>> resolve_ann("auto", 10_000), resolve_ann("auto", 60_000), resolve_ann("flat", 60_000)
    ('Flat', 'HNSW32', 'Flat')
    >>> index = make_ann_index(np.eye(3, dtype="float32"), "HNSW16", ef_search=32)
    >>> index.ntotal, index.hnsw.efSearch
    (3, 32)
    >>> check_ann("HNSW-32")
    Traceback (most recent call last):
    ...
    ValueError: ann 'HNSW-32' is not 'auto', 'flat' or a FAISS factory string: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rag_multihop.validation import check_int

AUTO_FLAT_LIMIT = 50_000
"""``ann="auto"`` searches exactly below this many passages (a flat scan of 50k MiniLM
vectors costs a few milliseconds), with :data:`AUTO_ANN` from there on."""

AUTO_ANN = "HNSW32"
"""The approximate index ``ann="auto"`` builds for large corpora."""

DEFAULT_EF_SEARCH = 128
"""HNSW's default search breadth here (FAISS's own, 16, loses recall on text embeddings)."""


def _faiss() -> Any:
    import faiss  # deferred: importing FAISS costs ~0.3 s

    return faiss


def resolve_ann(ann: str, n: int) -> str:
    """The FAISS factory string ``ann`` means for ``n`` passages (``"auto"`` and ``"flat"``
    resolved; a factory string as given)."""
    if ann == "auto":
        return "Flat" if n < AUTO_FLAT_LIMIT else AUTO_ANN
    if ann.lower() == "flat":
        return "Flat"
    return ann


def check_ann(ann: object, name: str = "ann", *, auto: bool = True) -> str:
    """``ann`` if it is ``"auto"`` (unless ``auto`` is false), ``"flat"`` or a factory
    string FAISS accepts, else ``ValueError`` naming ``name``, the value and the reason."""
    allowed = "'auto', 'flat'" if auto else "'flat'"
    if not isinstance(ann, str) or not ann.strip() or (ann == "auto" and not auto):
        raise ValueError(
            f"{name} must be {allowed} or a FAISS factory string such as 'HNSW32', got {ann!r}"
        )
    if ann == "auto" or ann.lower() == "flat":
        return ann
    try:
        _faiss().index_factory(8, ann, _faiss().METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1][:160] if str(exc).strip() else "refused"
        raise ValueError(
            f"{name} {ann!r} is not {allowed} or a FAISS factory string: {reason}"
        ) from None
    return ann


def check_ef_search(value: object, name: str = "ef_search") -> int:
    """A positive HNSW search breadth (1 .. 65,536), else ``ValueError``."""
    return check_int(value, name, low=1, high=65536)


def set_ef_search(index: Any, ef_search: int) -> None:
    """Set ``efSearch`` on ``index`` when it is (or wraps) an HNSW index; else nothing."""
    faiss = _faiss()
    inner = faiss.downcast_index(index)
    hnsw = getattr(inner, "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = int(ef_search)


ADD_ROWS = 1 << 16
"""Vectors are added to an index this many rows at a time (the same for every caller, so
the same vectors give the same graph)."""


def make_ann_index(
    vectors: np.ndarray,
    ann: str = "auto",
    *,
    ef_search: int = DEFAULT_EF_SEARCH,
    after_add: Callable[[], None] | None = None,
) -> Any:
    """A FAISS inner-product index of ``ann`` (resolved for ``len(vectors)``) holding
    ``vectors`` (float32 ``(n, d)``, normalised by the caller for cosine), trained on them
    when the index type needs training; added :data:`ADD_ROWS` at a time, ``after_add``
    called after each (an index build releases memory-mapped rows there)."""
    check_ef_search(ef_search)
    factory = resolve_ann(check_ann(ann), len(vectors))
    faiss = _faiss()
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(vectors)
    for start in range(0, len(vectors), ADD_ROWS):
        index.add(np.ascontiguousarray(vectors[start : start + ADD_ROWS], dtype=np.float32))
        if after_add is not None:
            after_add()
    set_ef_search(index, ef_search)
    return index
