"""Shared checks for embedding matrices and numeric knobs; messages name the bad value."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

# re-exported for older imports; the check lives in rag_multihop.secrets
from rag_multihop.secrets import check_env_var_name as check_env_var_name

if TYPE_CHECKING:
    from rag_multihop.types import Candidate, Passage, Query

logger = logging.getLogger(__name__)


def as_embedding_matrix(
    vectors: object,
    *,
    name: str = "vectors",
    dim: int | None = None,
    ids: Sequence[str] | None = None,
) -> np.ndarray:
    """Return ``vectors`` as a C-contiguous float32 ``(n, d)`` array, or raise ``ValueError``.

    Rejects rows of different lengths (naming the first row whose length differs from the
    first row's, and both lengths), missing rows, NaN/inf rows (naming the first bad rows) and
    a dimension other than ``dim``. With ``ids`` (one per row, in order) rows are named by
    their id.

    >>> as_embedding_matrix([[1.0, 0.0]], dim=2).shape
    (1, 2)
    >>> as_embedding_matrix([[1.0, 0.0], [1.0]], name="document embeddings", ids=["a", "b"])
    Traceback (most recent call last):
    ...
    ValueError: document embeddings differ in length: 'b' has dimension 1, the first ('a') has \
dimension 2
    """
    if not isinstance(vectors, np.ndarray):
        _check_row_lengths(vectors, name, ids)
    try:
        raw = np.asarray(vectors)
    except ValueError:  # rows of different lengths deeper than _check_row_lengths looks
        raw = np.asarray(vectors, dtype=object)
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, got values of dtype {raw.dtype}")
    array = raw.astype(np.float32, copy=False)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, dim) array, got shape {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"{name} have dimension {array.shape[1]}, expected {dim}")
    bad = ~np.isfinite(array).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)[:5].tolist()
        where = f"rows {rows}"
        if ids is not None and len(ids) == len(array):
            where += f", ids {[ids[r] for r in rows]}"
        raise ValueError(f"{name} contain NaN or inf values ({where}, {int(bad.sum())} in all)")
    return np.ascontiguousarray(array)


def _check_row_lengths(rows: object, name: str, ids: Sequence[str] | None) -> None:
    """``ValueError`` naming the first row of ``rows`` (a sequence of vectors) that is missing
    or whose length differs from the first row's; nothing for one vector of numbers."""
    if not isinstance(rows, (list, tuple)):
        return
    width: int | None = None
    for i, row in enumerate(rows):
        if row is None:
            raise ValueError(f"{name}: {_label(i, ids)} has no vector")
        if not hasattr(row, "__len__"):
            return  # a number: ``rows`` is one vector
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise ValueError(
                f"{name} differ in length: {_label(i, ids)} has dimension {len(row)}, the first "
                f"({_label(0, ids)}) has dimension {width}"
            )


def _label(row: int, ids: Sequence[str] | None) -> str:
    """Row ``row`` as errors name it: its id when known, else its position."""
    return repr(ids[row]) if ids is not None and row < len(ids) else f"row {row}"


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def check_unicode(value: str, what: str) -> None:
    """``ValueError`` unless ``value`` is valid Unicode: a lone surrogate (what a JSON
    ``"\\ud800"`` escape, a broken decoder or a file name that is not UTF-8 leaves) has no
    UTF-8 form, so it cannot be stored, hashed, embedded or sent; ``what`` names the value
    (its field and the id it belongs to).

    >>> check_unicode("café \\x00 \\U0001f600", "x")
    >>> check_unicode("a" + chr(0xD800), "text")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: text is not valid Unicode: a lone surrogate at position 1; clean it first, ...
    """
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} is not valid Unicode: a lone surrogate at position {exc.start}; clean it "
            'first, e.g. value.encode("utf-8", "replace").decode("utf-8")'
        ) from None


def check_texts(texts: object, name: str = "texts") -> list[str]:
    """``texts`` as a list when it is a sequence of strings, else ``TypeError`` (a bare
    string, which an encoder would read character by character, included); a text with a
    lone surrogate is a ``ValueError`` naming it (:func:`check_unicode`).

    >>> check_texts(("a", "b"))
    ['a', 'b']
    >>> check_texts("Where was he born?")
    Traceback (most recent call last):
    ...
    TypeError: texts must be a list of strings, got one str; wrap it: ['Where was he born?']
    """
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, got one str; wrap it: [{texts!r}]")
    if not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    found = list(texts)
    for i, text in enumerate(found):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a string, got {type(text).__name__}")
        if not text.isascii():  # the name made only where a surrogate can be
            check_unicode(text, f"{name}[{i}]")
    return found


def check_id_unicode(ids: Iterable[str], what: str) -> None:
    """:func:`check_unicode` of each of ``ids`` (strings), the error naming the id as
    ``id {id!r} {what}`` (``what``: "to delete", ...): an id that is not valid Unicode
    cannot be in an index.

    >>> check_id_unicode(["a", "b" + chr(0xDC80)], "to delete")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: id 'b\\udc80' to delete is not valid Unicode: a lone surrogate at position 1; ...
    """
    for value in ids:
        if not value.isascii():
            check_unicode(value, f"id {value!r} {what}")


def check_source_ids(
    ids: Sequence[str], sources: Sequence[str | None], what: str = "passage", field: str = "source"
) -> None:
    """``ValueError`` naming the first ``what`` (passage, node, document) of ``ids`` whose
    source document id (``sources[i]``; ``None`` for none) is not valid Unicode (a file
    name that is not UTF-8, as ``os.listdir`` gives it): the sources map stores it as text.
    Callers check it before they create or write anything.

    >>> check_source_ids(["n1"], ["b" + chr(0xD800)], "node", "ref_doc_id")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: node 'n1': ref_doc_id 'b\\ud800' is not valid Unicode: a lone surrogate at ...
    """
    for item, source in zip(ids, sources, strict=True):
        if isinstance(source, str) and not source.isascii():
            check_unicode(source, f"{what} {item!r}: {field} {source!r}")


def check_query(query: object) -> Query:
    """``query`` when it is a :class:`~rag_multihop.types.Query`, else ``TypeError`` saying
    how to make one (a bare question string is the usual slip).

    >>> check_query("Who?")
    Traceback (most recent call last):
    ...
    TypeError: expected a Query, got str 'Who?'; wrap a question's text: Query(text)
    """
    from rag_multihop.types import Query  # deferred: types imports this module

    if not isinstance(query, Query):
        raise TypeError(
            f"expected a Query, got {type(query).__name__} {query!r:.60}; "
            "wrap a question's text: Query(text)"
        )
    return query


def check_candidates(candidates: object, name: str = "candidates") -> list[Candidate]:
    """``candidates`` as a list when it is an iterable of
    :class:`~rag_multihop.types.Candidate`, else ``TypeError`` naming the first item that is
    not one (``None`` is an empty list).

    >>> check_candidates(None)
    []
    >>> check_candidates(["p1"])
    Traceback (most recent call last):
    ...
    TypeError: candidates[0] must be a Candidate, got str 'p1'
    """
    from rag_multihop.types import Candidate  # deferred: types imports this module

    if candidates is None:
        return []
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Iterable):
        raise TypeError(
            f"{name} must be a list of Candidate, got {type(candidates).__name__} "
            f"{candidates!r:.60}"
        )
    found = list(candidates)
    for i, candidate in enumerate(found):
        if not isinstance(candidate, Candidate):
            raise TypeError(
                f"{name}[{i}] must be a Candidate, got {type(candidate).__name__} {candidate!r:.60}"
            )
    return found


def check_positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_fraction(value: float, name: str) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def _range_text(
    low: float | None, high: float | None, *, low_open: bool = False, high_open: bool = False
) -> str:
    """``"in [0, 1)"``, ``">= 0"``, ``"> 0"`` or ``""`` for the bounds of a check."""
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def check_number(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float when it is a finite real number within the bounds, else
    ``ValueError`` naming ``name``, the value and the allowed range (booleans are refused).

    >>> check_number(0.5, "damping", low=0, high=1, high_open=True)
    0.5
    >>> check_number(1.0, "damping", low=0, high=1, high_open=True)
    Traceback (most recent call last):
    ...
    ValueError: damping must be in [0, 1), got 1.0
    """
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        number = float(value)
        if (
            np.isfinite(number)
            and (low is None or (number > low if low_open else number >= low))
            and (high is None or (number < high if high_open else number <= high))
        ):
            return number
    bounds = _range_text(low, high, low_open=low_open, high_open=high_open)
    what = bounds if low is not None and high is not None else f"a finite number {bounds}"
    raise ValueError(f"{name} must be {what.strip()}, got {value!r}")


def check_int(value: object, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int when it is an integer within ``[low, high]``, else ``ValueError``
    naming ``name``, the value and the allowed range (booleans and floats are refused).

    >>> check_int(3, "entities", low=0)
    3
    >>> check_int(-1, "entities", low=0)
    Traceback (most recent call last):
    ...
    ValueError: entities must be an integer >= 0, got -1
    """
    if (
        isinstance(value, int | np.integer)
        and not isinstance(value, bool)
        and (low is None or value >= low)
        and (high is None or value <= high)
    ):
        return int(value)
    bounds = _range_text(low, high)
    raise ValueError(f"{name} must be an integer{' ' + bounds if bounds else ''}, got {value!r}")


def check_choice(value: object, name: str, choices: Iterable[str]) -> str:
    """``value`` when it is one of ``choices``, else ``ValueError`` listing them.

    >>> check_choice("push", "ppr", ("auto", "power", "push"))
    'push'
    >>> check_choice("fast", "ppr", ("auto", "power", "push"))
    Traceback (most recent call last):
    ...
    ValueError: ppr must be one of ['auto', 'power', 'push'], got 'fast'
    """
    allowed = list(choices)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


LOG_TEXT_LIMIT = 200
"""Characters of a user-supplied text (a query, a reply) that a log line shows."""


def loggable(text: object, limit: int = LOG_TEXT_LIMIT) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters, saying how much was left out, so a
    300 KB query never fills a log line.

    >>> loggable("short")
    "'short'"
    >>> loggable("x" * 1000, limit=10)
    "'xxxxxxxx… (+993 characters)"
    """
    shown = repr(text) if isinstance(text, str) else str(text)
    if len(shown) <= limit:
        return shown
    return f"{shown[: limit - 1]}… (+{len(shown) - limit + 1} characters)"


def check_unique_ids(ids: Sequence[str], what: str = "passage") -> None:
    """``ValueError`` naming the ids more than one ``what`` (passage, node, document) of a
    batch has: an index holds one passage per id.

    >>> check_unique_ids(["a", "b", "a"], "node")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 1 node id(s) occur more than once in the batch, e.g. ['a']: ...
    """
    counts = Counter(ids)
    repeated = [i for i, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(
            f"{len(repeated)} {what} id(s) occur more than once in the batch, e.g. "
            f"{repeated[:3]}: the index holds one passage per id; give each {what} its own id "
            "or drop the repeats"
        )


def warn_textless(passages: Sequence[Passage], what: str = "passage") -> None:
    """Log a warning naming the passages of a batch without text (an index keeps them, as a
    vector store does: found by their embedding alone, returned empty)."""
    textless = [p.id for p in passages if not p.text.strip()]
    if textless:
        logger.warning(
            "%d %s(s) have no text, e.g. %s: written as passages without text (found by "
            "their embedding alone, returned empty)",
            len(textless),
            what,
            textless[:3],
        )


def metadata_title(value: object, where: str) -> str:
    """A title read from a framework object's metadata: a string, a number or date as its
    text, ``""`` when absent; a collection (a list, a numpy array) is a ``ValueError``
    naming ``where``.

    >>> metadata_title(2024, "node 'n1': metadata['title']")
    '2024'
    >>> metadata_title(["A", "B"], "node 'n1': metadata['title']")
    Traceback (most recent call last):
    ...
    ValueError: node 'n1': metadata['title'] must be a string, got list ['A', 'B']
    """
    if isinstance(value, Collection) and not isinstance(value, str):
        raise ValueError(f"{where} must be a string, got {type(value).__name__} {value!r:.60}")
    return str(value or "")


def check_batch_dim(got: int, expected: int, first_id: str, what: str, index: object) -> None:
    """``ValueError`` when a batch of ``what`` s (node, document) embedded at dimension
    ``got`` goes to the index at ``index`` that holds ``expected``-dimensional vectors.

    >>> check_batch_dim(3, 64, "n1", "node", "corpus.idx")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: node 'n1' has an embedding of dimension 3, but the index at corpus.idx holds ...
    """
    if got != expected:
        raise ValueError(
            f"{what} {first_id!r} has an embedding of dimension {got}, but the index at {index} "
            f"holds dimension {expected}: embed the {what}s with the model the index was built "
            "with (or write them to a new index_path)"
        )
