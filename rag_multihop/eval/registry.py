"""The registry of benchmark methods and the context they are built from.

A method is a factory ``build(context) -> Retriever``, registered under a name. Core
methods register in :mod:`rag_multihop.eval.methods` (one module per family); third-party
plugins register theirs through the ``rag_multihop.methods`` entry-point group, whose
entries name a module that calls :func:`register_method` when imported.

Example:
    >>> @register_method("dense-copy", "dense retrieval, registered twice for this example")
    ... def _build(context):
    ...     return context.dense
    >>> "dense-copy" in available_methods()
    True
    >>> unregister_method("dense-copy")
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.eval.datasets import Dataset
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rag_multihop.methods"


@dataclass
class BenchContext:
    """Everything methods share on one dataset: the corpus, its vectors and the base retrievers.

    Every method sees the same passage and query embeddings, so differences between methods
    come from the methods alone. ``artifacts`` lets methods share expensive state (a trained
    model, a graph) within one benchmark run. ``options`` carries method options from the CLI.
    """

    dataset: Dataset
    encoder: Encoder
    passage_vectors: np.ndarray
    query_vectors: np.ndarray
    options: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def dense(self) -> DenseRetriever:
        """Exact cosine retrieval over ``passage_vectors`` (FAISS flat inner product)."""
        index = DenseIndex.build(self.dataset.corpus.ids, self.passage_vectors)
        return DenseRetriever(self.dataset.corpus, index, self.encoder)

    @cached_property
    def bm25(self) -> BM25Retriever:
        """BM25 over the corpus; ``--option bm25_stemmer=none`` turns stemming off."""
        stemmer = self.options.get("bm25_stemmer", "english")
        return BM25Retriever(self.dataset.corpus, stemmer=None if stemmer == "none" else stemmer)

    def queries(self) -> list[Query]:
        """One :class:`Query` per question, carrying its precomputed embedding."""
        return [
            Query(q.question, id=q.id, embedding=self.query_vectors[i])
            for i, q in enumerate(self.dataset.questions)
        ]


MethodFactory = Callable[[BenchContext], Retriever]

PEER_CHILD_K_OPTION = "peer_child_k"
"""Benchmark option: candidates each child of a peer fusion returns before fusing."""
DEFAULT_PEER_CHILD_K = 100


def parse_option(options: Mapping[str, Any], key: str, default: Any, parse: type) -> Any:
    """Option ``key`` (CLI values arrive as strings) converted by ``parse``, else ``default``.

    >>> parse_option({"aar_k": "50"}, "aar_k", 100, int), parse_option({}, "aar_k", 100, int)
    (50, 100)
    """
    value = options.get(key, default)
    try:
        return parse(value)
    except (TypeError, ValueError):
        raise ValueError(f"option {key} must be a {parse.__name__}, got {value!r}") from None


def peer_child_k(options: Mapping[str, Any]) -> int:
    """The peers' child depth from benchmark options (default :data:`DEFAULT_PEER_CHILD_K`)."""
    value = options.get(PEER_CHILD_K_OPTION, DEFAULT_PEER_CHILD_K)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    try:
        return check_positive_int(value, PEER_CHILD_K_OPTION)
    except ValueError:
        raise ValueError(
            f"option {PEER_CHILD_K_OPTION} must be a positive integer (candidates per child "
            f"retriever before fusion; default {DEFAULT_PEER_CHILD_K}), got {value!r}"
        ) from None


@dataclass(frozen=True)
class MethodSpec:
    name: str
    description: str
    build: MethodFactory
    family: str = "ours"  # "ours" or "peer"


_REGISTRY: dict[str, MethodSpec] = {}
_entry_points_loaded = False


def register_method(
    name: str, description: str, *, family: str = "ours"
) -> Callable[[MethodFactory], MethodFactory]:
    """Decorator registering a method factory under ``name``."""

    def decorator(factory: MethodFactory) -> MethodFactory:
        _REGISTRY[name] = MethodSpec(name, description, factory, family)
        return factory

    return decorator


def unregister_method(name: str) -> None:
    """Remove ``name`` from the registry (for tests and for replacing a method)."""
    _REGISTRY.pop(name, None)


def available_methods() -> dict[str, MethodSpec]:
    """Registered methods, after loading the core ones and those of installed integrations."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        importlib.import_module("rag_multihop.eval.methods")
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()
            except ImportError as exc:
                logger.warning("skipping benchmark methods from %s: %s", entry.value, exc)
    return dict(_REGISTRY)


_OPTIONS: dict[str, str] = {}


def declare_options(owner: str, *keys: str) -> None:
    """Declare the ``--option`` keys that ``owner`` (a method family) reads, so that
    :func:`check_options` can refuse keys nobody reads. Call it next to the family's
    :func:`register_method` calls (plugins too)."""
    for key in keys:
        _OPTIONS.setdefault(key, owner)


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse option keys that no registered method family reads (a typo such as
    ``aar_lamda`` would otherwise run silently with the default), naming the closest valid
    key and listing them all.

    >>> check_options({"aar_lamda": "0.3"})
    Traceback (most recent call last):
    ...
    ValueError: unknown --option 'aar_lamda' (did you mean 'aar_lambda'?); valid options: ...
    """
    available_methods()  # the families declare their options when they load
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(_OPTIONS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown --option {unknown[0]!r}{hint}; valid options: {', '.join(sorted(_OPTIONS))}"
        )


declare_options("registry", "bm25_stemmer", PEER_CHILD_K_OPTION)


def get_method(name: str) -> MethodSpec:
    methods = available_methods()
    if name not in methods:
        raise ValueError(f"unknown method {name!r}; choose from: {', '.join(sorted(methods))}")
    return methods[name]
