"""The registry of benchmark methods and of the ``--option`` keys their families read.

A method is a factory ``build(context) -> Retriever`` (the context is a
:class:`~rag_multihop.eval.context.BenchContext`), registered under a name with
:func:`register_method`. This module is the lowest of the benchmark: it holds the decorator
and the dicts and names nothing above it. Finding the methods (importing the core families,
loading plugins' entry points) is :mod:`rag_multihop.eval.methods`'s job.

A family's ``--option KEY=VALUE`` keys come from its settings dataclasses:
:func:`declare_settings` derives the keys from the fields (declared once) and returns an
:class:`~rag_multihop.eval.options.OptionGroup` whose ``read`` runs
:func:`settings_from_options`, the one converter from CLI strings to validated settings.

Example:
    >>> @register_method("dense-copy", "dense retrieval, registered twice for this example")
    ... def _build(context):
    ...     return context.dense
    >>> registered_methods()["dense-copy"].family
    'ours'
    >>> unregister_method("dense-copy")
    >>> "dense-copy" in registered_methods()
    False
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from rag_multihop.eval.options import OptionGroup, settings_from_options
from rag_multihop.protocols import Retriever
from rag_multihop.validation import check_positive_int

if TYPE_CHECKING:
    from rag_multihop.eval.context import BenchContext

__all__ = [
    "DEFAULT_PEER_CHILD_K",
    "PEER_CHILD_K_OPTION",
    "MethodSpec",
    "OptionGroup",
    "PeerSettings",
    "declare_options",
    "declare_settings",
    "declared_option_groups",
    "declared_options",
    "peer_child_k",
    "register_method",
    "registered_methods",
    "settings_from_options",
    "unregister_method",
]

S = TypeVar("S")

MethodFactory = Callable[["BenchContext"], Retriever]


@dataclass(frozen=True)
class MethodSpec:
    name: str
    description: str
    build: MethodFactory
    family: str = "ours"  # "ours" or "peer"
    requires: frozenset[str] = frozenset()  # of REQUIREMENTS: ``--methods all`` leaves it
    # out of a run that lacks one


_REGISTRY: dict[str, MethodSpec] = {}


REQUIREMENTS = {"llm": "--llm", "test-split": "--split test"}
"""What a method may need of a run, and the flag that gives it."""


def register_method(
    name: str, description: str, *, family: str = "ours", requires: Sequence[str] = ()
) -> Callable[[MethodFactory], MethodFactory]:
    """Decorator registering a method factory under ``name`` (``requires``: keys of
    :data:`REQUIREMENTS` it cannot run without)."""
    unknown = sorted(set(requires) - set(REQUIREMENTS))
    if unknown:
        raise ValueError(f"method {name!r}: unknown requirements {unknown}; use {REQUIREMENTS}")

    def decorator(factory: MethodFactory) -> MethodFactory:
        _REGISTRY[name] = MethodSpec(name, description, factory, family, frozenset(requires))
        return factory

    return decorator


def unregister_method(name: str) -> None:
    """Remove ``name`` from the registry (for tests and for replacing a method)."""
    _REGISTRY.pop(name, None)


def registered_methods() -> dict[str, MethodSpec]:
    """The methods registered so far (a copy); :func:`rag_multihop.eval.methods.available_methods`
    loads the families and plugins first."""
    return dict(_REGISTRY)


_OPTIONS: dict[str, str] = {}
_GROUPS: list[OptionGroup[Any]] = []


def declare_options(owner: str, *keys: str) -> None:
    """Declare ``--option`` keys that ``owner`` (a method family or plugin) reads without a
    settings class, so that :func:`~rag_multihop.eval.methods.check_options` accepts them; a
    family with settings uses :func:`declare_settings`."""
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


def declared_options() -> dict[str, str]:
    """Every declared ``--option`` key and the family that reads it (a copy)."""
    return dict(_OPTIONS)


def declared_option_groups() -> list[OptionGroup[Any]]:
    """Every settings group declared with :func:`declare_settings` (a copy)."""
    return list(_GROUPS)


@dataclass(frozen=True)
class PeerSettings:
    """Benchmark knobs of the framework peers (``li-fusion-*``, ``hs-joiner-*``).

    Attributes:
        child_k: candidates each child of a peer fusion returns before fusing.
    """

    child_k: int = 100

    def __post_init__(self) -> None:
        check_positive_int(self.child_k, "child_k")


PEER_CHILD_K_OPTION = "peer_child_k"
"""Benchmark option: candidates each child of a peer fusion returns before fusing."""
DEFAULT_PEER_CHILD_K = PeerSettings().child_k
PEER_OPTIONS = declare_settings("registry", PeerSettings, prefix="peer_")


def peer_child_k(options: Mapping[str, Any]) -> int:
    """The peers' child depth from benchmark options (``peer_child_k``, default
    :data:`DEFAULT_PEER_CHILD_K`)."""
    return PEER_OPTIONS.read(options).child_k
