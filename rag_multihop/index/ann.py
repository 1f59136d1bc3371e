"""The one place a FAISS index is made from an ANN setting: ``"auto"``, ``"flat"`` or a factory.

- ``"auto"`` (the default of the in-memory retrievers): exact search (``Flat``) below
  :data:`AUTO_FLAT_LIMIT` passages, ``"HNSW32"`` from there on, so query cost stops growing
  linearly with the corpus where exact search gets slow;
- ``"flat"`` / ``"Flat"``: exact inner product, whatever the size;
- any FAISS factory string (``"HNSW32"``, ``"IVF1024,Flat"``, ``"HNSW32,SQ8"``, ...).

``ef_search`` sets HNSW's search breadth (FAISS ``efSearch``; higher is more exact and
slower); it is ignored by indexes without one. An index that must be trained on more
vectors than it is given (an IVF's ``nlist`` lists, a PQ's ``2**nbits`` centroids:
:func:`min_train_rows`) is made exact (``Flat``) instead: over so few vectors exact search
is both right and cheap. Factory strings FAISS parses but whose index cannot be built here
at any size (an ``IDMap``, an ``NSG`` graph, an IVF whose ``RCQ`` quantizer makes another
number of lists) are refused by :func:`check_ann`, with the reason.

Example:
    >>> import numpy as np
    >>> resolve_ann("auto", 10_000), resolve_ann("auto", 60_000), resolve_ann("flat", 60_000)
    ('Flat', 'HNSW32', 'Flat')
    >>> index = make_ann_index(np.eye(3, dtype="float32"), "HNSW16", ef_search=32)
    >>> index.ntotal, index.hnsw.efSearch
    (3, 32)
    >>> resolve_ann("IVF4,Flat", 3, dim=8), resolve_ann("IVF4,Flat", 4, dim=8)
    ('Flat', 'IVF4,Flat')
    >>> check_ann("HNSW-32")
    Traceback (most recent call last):
    ...
    ValueError: ann 'HNSW-32' is not 'auto', 'flat' or a FAISS factory string: ...
    >>> check_ann("PQ16", dim=20)
    Traceback (most recent call last):
    ...
    ValueError: ann 'PQ16' does not fit dimension 20: ...
    >>> check_ann("IVF4(RCQ2x2),Flat")
    Traceback (most recent call last):
    ...
    ValueError: ann 'IVF4(RCQ2x2),Flat' cannot be built here: its coarse quantizer makes 16 ...
"""

from __future__ import annotations

import re
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

ANY_DIM = 11_520
"""The dimension a factory string is also tried at when none is given (``2**8 * 3**2 * 5``:
it splits into every usual number of PQ sub-quantizers, where 8 refuses ``PQ16``)."""

FAISS_WHERE = re.compile(r"^Error in .* at \S+:\d+: (Error: )?")
"""Where in FAISS's C++ an error was raised (dropped from the messages here)."""

OPQ_CENTROIDS = 256
"""The centroids of the PQ an ``OPQ`` rotation trains with (FAISS's default, 8 bits)."""


def _faiss() -> Any:
    import faiss  # deferred: importing FAISS costs ~0.3 s

    return faiss


def resolve_ann(ann: str, n: int, dim: int | None = None) -> str:
    """The FAISS factory string ``ann`` means for ``n`` passages (``"auto"`` and ``"flat"``
    resolved; a factory string as given, or, with ``dim``, ``"Flat"`` when ``n`` vectors
    are too few to train its index: :func:`min_train_rows`)."""
    if ann == "auto":
        return "Flat" if n < AUTO_FLAT_LIMIT else AUTO_ANN
    if ann.lower() == "flat":
        return "Flat"
    if dim is not None and n < min_train_rows(_factory_index(ann, dim)):
        return "Flat"
    return ann


def min_train_rows(index: Any) -> int:
    """The fewest vectors FAISS trains ``index`` on: its largest k-means (an IVF's
    ``nlist`` lists, a product quantizer's ``2**nbits`` centroids, an additive quantizer's
    largest codebook, an ``OPQ`` rotation's PQ) or fitted dimension (a PCA's output, an
    additive quantizer's input), found through the indexes it wraps; 0 when it needs no
    training."""
    faiss = _faiss()
    if index.is_trained:
        return 0
    inner = faiss.downcast_index(index)  # a view: ``index`` keeps owning the C++ object
    need = int(getattr(inner, "nlist", 1))
    pq = getattr(inner, "pq", None)
    if pq is not None:
        need = max(need, int(pq.ksub))
    additive = getattr(inner, "aq", None)
    if additive is not None:
        codebook = 1 << int(faiss.vector_to_array(additive.nbits).max())
        need = max(need, codebook, int(inner.d))
    for wrapped in _wrapped(inner):
        need = max(need, min_train_rows(wrapped))
    chain: Any = getattr(inner, "chain", None)  # a pre-transform's vector transforms
    for i in range(chain.size() if chain is not None else 0):
        transform = faiss.downcast_VectorTransform(chain.at(i))
        if not transform.is_trained:
            need = max(need, int(transform.d_out))
        if isinstance(transform, faiss.OPQMatrix):
            need = max(need, OPQ_CENTROIDS if transform.pq is None else int(transform.pq.ksub))
    return need


_WRAPPING = ("storage", "base_index", "refine_index", "index", "quantizer")


def _wrapped(inner: Any) -> list[Any]:
    """The indexes ``inner`` (a downcast index) wraps: an HNSW's storage, a refine's two
    indexes, a pre-transform's or an ``IDMap``'s index, an IVF's coarse quantizer."""
    parts = (getattr(inner, name, None) for name in _WRAPPING)
    return [part for part in parts if isinstance(part, _faiss().Index)]


def _unbuildable(index: Any) -> str | None:
    """Why an index of ``index``'s kind cannot be built here, whatever the vectors (it or an
    index it wraps is one of these), else ``None``:

    - an ``IDMap``/``IDMap2``: FAISS takes its rows with ids only (``add_with_ids``); rows
      here are added in order and their position is the id;
    - an ``NSG`` graph: FAISS builds it once, from more than 100 vectors, and cannot add to
      it (rows are added :data:`ADD_ROWS` at a time), and some sizes hang or abort the build;
    - an IVF whose coarse quantizer fixes its own number of lists (``RCQ2x2``: ``2**4``)
      other than the IVF's ``nlist``: FAISS refuses to train it.
    """
    faiss = _faiss()
    inner = faiss.downcast_index(index)  # a view: ``index`` keeps owning the C++ object
    if isinstance(inner, faiss.IndexIDMap):
        return (
            "an IDMap takes its rows with ids (add_with_ids), while rows here are added in "
            "order and their position is the id; leave the 'IDMap' out"
        )
    if isinstance(inner, faiss.IndexNSG):
        return (
            "FAISS builds an NSG graph once, from more than 100 vectors, and cannot add to "
            "it (some sizes hang or abort the build); use HNSW, e.g. 'HNSW32'"
        )
    quantizer = getattr(inner, "quantizer", None)
    coarse = None if quantizer is None else faiss.downcast_index(quantizer)
    if isinstance(coarse, faiss.AdditiveCoarseQuantizer):
        lists = 1 << int(coarse.aq.tot_bits)
        if lists != getattr(inner, "nlist", lists):
            return (
                f"its coarse quantizer makes {lists} lists, not the {inner.nlist} of "
                f"IVF{inner.nlist}; write IVF{lists}(...)"
            )
    for part in _wrapped(inner):
        why = _unbuildable(part)
        if why:
            return why
    return None


def _factory_index(factory: str, dim: int) -> Any:
    """The empty inner-product index ``factory`` makes for ``dim``-dimensional vectors."""
    faiss = _faiss()
    return faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)


def _refusal(factory: str, dim: int) -> str | None:
    """Why FAISS refuses ``factory`` at dimension ``dim`` (its message, without the C++
    location), or ``None`` when it makes the index."""
    try:
        _factory_index(factory, dim)
    except RuntimeError as exc:
        lines = str(exc).strip().splitlines()
        return FAISS_WHERE.sub("", lines[-1])[:200] if lines else "refused"
    return None


def check_ann(ann: object, name: str = "ann", *, auto: bool = True, dim: int | None = None) -> str:
    """``ann`` if it is ``"auto"`` (unless ``auto`` is false), ``"flat"`` or a factory
    string FAISS accepts and this module can build (not an ``IDMap``, an ``NSG`` or an
    IVF whose coarse quantizer disagrees with its ``nlist``), else
    ``ValueError`` naming ``name``, the value and the reason.

    A factory string is tried at dimension ``dim`` when given (a PQ must split it: ``PQ16``
    fits 32, not 20); else at 8 or :data:`ANY_DIM`, and checked again at the vectors'
    dimension when the index is made."""
    allowed = "'auto', 'flat'" if auto else "'flat'"
    if not isinstance(ann, str) or not ann.strip() or (ann == "auto" and not auto):
        raise ValueError(
            f"{name} must be {allowed} or a FAISS factory string such as 'HNSW32', got {ann!r}"
        )
    if ann == "auto" or ann.lower() == "flat":
        return ann
    dims = (8, ANY_DIM) if dim is None else (dim, 8, ANY_DIM)
    fit = next((d for d in dims if _refusal(ann, d) is None), None)
    if fit is None:
        reason = _refusal(ann, dims[0])
        raise ValueError(f"{name} {ann!r} is not {allowed} or a FAISS factory string: {reason}")
    why = _unbuildable(_factory_index(ann, fit))
    if why:
        raise ValueError(f"{name} {ann!r} cannot be built here: {why}")
    if dim is not None and fit != dim:
        raise ValueError(f"{name} {ann!r} does not fit dimension {dim}: {_refusal(ann, dim)}")
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
    """A FAISS inner-product index of ``ann`` (resolved for ``len(vectors)`` and their
    dimension: exact ``Flat`` when they are too few to train it) holding ``vectors``
    (float32 ``(n, d)``, normalised by the caller for cosine), trained on them when the
    index type needs training; added :data:`ADD_ROWS` at a time, ``after_add`` called
    after each (an index build releases memory-mapped rows there)."""
    check_ef_search(ef_search)
    dim = vectors.shape[1]
    index = _factory_index(resolve_ann(check_ann(ann, dim=dim), len(vectors), dim), dim)
    if not index.is_trained:
        index.train(vectors)
    for start in range(0, len(vectors), ADD_ROWS):
        index.add(np.ascontiguousarray(vectors[start : start + ADD_ROWS], dtype=np.float32))
        if after_add is not None:
            after_add()
    set_ef_search(index, ef_search)
    return index
