"""The registry of benchmark methods and the context they are built from.

A method is a factory ``build(context) -> Retriever``, registered under a name. Core
methods register in :mod:`rag_multihop.eval.methods` (one module per family); third-party
plugins register theirs through the ``rag_multihop.methods`` entry-point group, whose
entries name a module that calls :func:`register_method` when imported.

A family's ``--option KEY=VALUE`` keys come from its settings dataclasses:
:func:`declare_settings` derives the keys from the fields (declared once) and returns an
:class:`~rag_multihop.eval.options.OptionGroup` whose ``read`` runs
:func:`settings_from_options`, the one converter from CLI strings to validated settings.

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
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any, TypeVar

import numpy as np

from rag_multihop.encoders.base import Encoder
from rag_multihop.eval.datasets import Dataset
from rag_multihop.eval.options import OptionGroup, settings_from_options
from rag_multihop.index.bm25 import BM25Retriever
from rag_multihop.index.dense import DenseIndex, DenseRetriever
from rag_multihop.protocols import Retriever
from rag_multihop.types import Query
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PEER_CHILD_K",
    "ENTRY_POINT_GROUP",
    "PEER_CHILD_K_OPTION",
    "BM25Settings",
    "BenchContext",
    "MethodSpec",
    "OptionGroup",
    "PeerSettings",
    "available_methods",
    "check_options",
    "declare_options",
    "declare_settings",
    "get_method",
    "peer_child_k",
    "register_method",
    "settings_from_options",
    "unregister_method",
]

S = TypeVar("S")

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
        stemmer = BM25_OPTIONS.read(self.options).stemmer
        return BM25Retriever(self.dataset.corpus, stemmer=None if stemmer == "none" else stemmer)

    def queries(self) -> list[Query]:
        """One :class:`Query` per question, carrying its precomputed embedding."""
        return [
            Query(q.question, id=q.id, embedding=self.query_vectors[i])
            for i, q in enumerate(self.dataset.questions)
        ]


MethodFactory = Callable[[BenchContext], Retriever]


@dataclass(frozen=True)
class PeerSettings:
    """Benchmark knobs of the framework peers (``li-fusion-*``, ``hs-joiner-*``).

    Attributes:
        child_k: candidates each child of a peer fusion returns before fusing.
    """

    child_k: int = 100

    def __post_init__(self) -> None:
        check_positive_int(self.child_k, "child_k")


@dataclass(frozen=True)
class BM25Settings:
    """Benchmark knobs of the ``bm25`` baseline.

    Attributes:
        stemmer: a PyStemmer language, or ``"none"`` for no stemming.
    """

    stemmer: str = "english"


PEER_CHILD_K_OPTION = "peer_child_k"
"""Benchmark option: candidates each child of a peer fusion returns before fusing."""
DEFAULT_PEER_CHILD_K = PeerSettings().child_k


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
        # deferred (the family modules import this one), but a static import tools can see
        import rag_multihop.eval.methods  # noqa: F401

        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()
            except ImportError as exc:
                logger.warning("skipping benchmark methods from %s: %s", entry.value, exc)
    return dict(_REGISTRY)


_OPTIONS: dict[str, str] = {}
_GROUPS: list[OptionGroup[Any]] = []


def declare_options(owner: str, *keys: str) -> None:
    """Declare ``--option`` keys that ``owner`` (a method family or plugin) reads without a
    settings class, so that :func:`check_options` accepts them; a family with settings uses
    :func:`declare_settings`."""
    for key in keys:
        _OPTIONS.setdefault(key, owner)


def declare_settings(
    owner: str,
    settings: type[S],
    *,
    prefix: str,
    exclude: Collection[str] = (),
    base: S | None = None,
) -> OptionGroup[S]:
    """Declare the ``--option`` keys of ``settings`` for ``owner`` (derived from its fields,
    see :func:`~rag_multihop.eval.options.option_fields`; ``base`` holds bench defaults that
    differ from the class's); returns the :class:`~rag_multihop.eval.options.OptionGroup`
    the family reads its options with. Call it next to the family's :func:`register_method`.
    """
    group = OptionGroup(owner, settings, prefix, frozenset(exclude), base)
    declare_options(owner, *group.option_keys())
    _GROUPS.append(group)
    return group


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse option keys that no registered method family reads (a typo such as
    ``aar_lamda`` would otherwise run silently with the default), naming the closest valid
    key and listing them all; then read every declared settings group, so that a bad value
    fails before the run embeds anything.

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
    for group in _GROUPS:
        group.read(options)


PEER_OPTIONS = declare_settings("registry", PeerSettings, prefix="peer_")
BM25_OPTIONS = declare_settings("registry", BM25Settings, prefix="bm25_")


def peer_child_k(options: Mapping[str, Any]) -> int:
    """The peers' child depth from benchmark options (``peer_child_k``, default
    :data:`DEFAULT_PEER_CHILD_K`)."""
    return PEER_OPTIONS.read(options).child_k


def get_method(name: str) -> MethodSpec:
    methods = available_methods()
    if name not in methods:
        raise ValueError(f"unknown method {name!r}; choose from: {', '.join(sorted(methods))}")
    return methods[name]
