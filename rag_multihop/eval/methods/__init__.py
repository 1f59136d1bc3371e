"""Benchmark method factories, one module per family, and finding them.

Each family module registers ``build(context) -> Retriever`` factories with
:func:`rag_multihop.eval.registry.register_method`; importing this package imports them all.
Third-party plugins register theirs through the ``rag_multihop.methods`` entry-point group
(:data:`ENTRY_POINT_GROUP`), whose entries name a module that calls ``register_method`` when
imported; :func:`available_methods` loads them once. Method packages (``association/``,
``fusion/``, ``graph/``, ``bridge/``, ``coop/``, ``multihop/``) hold only the method and never
import this package. The framework peers (:mod:`.peers`) load LlamaIndex or Haystack only when
a peer is built.

Example:
    >>> {"dense", "multihop", "rala", "coop"} <= set(available_methods())
    True
    >>> get_method("multihop").family, get_method("dense").family
    ('ours', 'peer')
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from rag_multihop.eval.methods import (
    association,
    baselines,
    bridge,
    coop,
    finetune,
    graph_fusion,
    multihop,
    peers,
    rala,
)
from rag_multihop.eval.registry import (
    MethodSpec,
    declared_option_groups,
    declared_options,
    registered_methods,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ENTRY_POINT_GROUP",
    "association",
    "available_methods",
    "baselines",
    "bridge",
    "check_options",
    "coop",
    "finetune",
    "get_method",
    "graph_fusion",
    "multihop",
    "peers",
    "rala",
]

ENTRY_POINT_GROUP = "rag_multihop.methods"

_entry_points_loaded = False


def available_methods() -> dict[str, MethodSpec]:
    """Registered methods: the core families' and those of installed plugins (loaded once)."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()
            except ImportError as exc:
                logger.warning("skipping benchmark methods from %s: %s", entry.value, exc)
    return registered_methods()


def get_method(name: str) -> MethodSpec:
    """The method registered as ``name``; ``ValueError`` lists the available ones."""
    methods = available_methods()
    if name not in methods:
        raise ValueError(f"unknown method {name!r}; choose from: {', '.join(sorted(methods))}")
    return methods[name]


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse option keys that no method family reads (a typo such as ``aar_lamda`` would
    otherwise run silently with the default), naming the closest valid key and listing them
    all; then read every declared settings group, so that a bad value fails before the run
    embeds anything.

    >>> check_options({"aar_lamda": "0.3"})
    Traceback (most recent call last):
    ...
    ValueError: unknown --option 'aar_lamda' (did you mean 'aar_lambda'?); valid options: ...
    """
    available_methods()  # plugins declare their options when they load
    known = declared_options()
    unknown = sorted(set(options) - set(known))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown --option {unknown[0]!r}{hint}; valid options: {', '.join(sorted(known))}"
        )
    for group in declared_option_groups():
        group.read(options)
