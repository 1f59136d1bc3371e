"""``--option KEY=VALUE`` strings to a validated settings object: the one converter.

A settings class is a frozen dataclass whose ``__post_init__`` validates every knob.
:func:`settings_from_options` converts each option's text by its field's type (``int``,
``float``, ``bool``, ``str``, ``Literal``, ``X | None``, ``tuple[X, ...]`` as comma-separated
values, ``Mapping[str, X]`` as ``NAME=VALUE`` pairs, a nested dataclass as its fields'
values in order), applies them over the defaults and lets the dataclass validate them; a
key under the family's prefix that names no field is refused, listing the valid ones.

Keys are ``prefix + field name`` (a trailing ``_`` dropped: ``lambda_`` -> ``aar_lambda``;
a name that already starts with the prefix is used as it is: ``bridge_position``), unless
the field's metadata names its key (:data:`OPTION`). A field marked :data:`FLATTEN` holds
another settings object whose fields become options under the same prefix (a benchmark
family composing a method's settings with its own). Families declare their settings with
:func:`rag_multihop.eval.registry.declare_settings`, which returns an :class:`OptionGroup`.

Example:
    >>> from rag_multihop.bridge import BridgeSettings
    >>> settings = settings_from_options(
    ...     BridgeSettings,
    ...     {"bridge_alpha": "0.15", "bridge_templates": "question,residual", "llm": "x"},
    ...     prefix="bridge_",
    ... )
    >>> settings.alpha, settings.templates
    (0.15, ('question', 'residual'))
    >>> settings_from_options(BridgeSettings, {"bridge_alhpa": "0.15"}, prefix="bridge_")
    Traceback (most recent call last):
    ...
    ValueError: unknown --option 'bridge_alhpa' (did you mean 'bridge_alpha'?); valid ...
    >>> settings_from_options(BridgeSettings, {"bridge_alpha": "2"}, prefix="bridge_")
    Traceback (most recent call last):
    ...
    ValueError: invalid --option bridge_alpha='2': alpha must be in [0, 1], got 2.0
"""

from __future__ import annotations

import dataclasses
import difflib
from collections import abc
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

S = TypeVar("S")

OPTION = "option"
"""Settings field metadata key: the field's ``--option`` key where it is not ``prefix +
name`` (kept for names the docs already use, e.g. AAR's ``protocol``)."""

FLATTEN = "flatten"
"""Settings field metadata key (``True``): the field holds another settings dataclass whose
fields are options of their own, under the same prefix."""


@dataclass(frozen=True)
class OptionField:
    """One ``--option`` key: the field path its value goes to and how its text converts."""

    key: str
    path: tuple[str, ...]
    parse: Callable[[str], Any]
    described: str


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _choice(choices: list[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(text)
        return text

    return parse


def _optional(inner: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return None if text.strip().lower() in ("", "none") else inner(text)

    return parse


def _items(item: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        return tuple(item(part.strip()) for part in text.split(",") if part.strip())

    return parse


def _pairs(value: Callable[[str], Any]) -> Callable[[str], dict[str, Any]]:
    def parse(text: str) -> dict[str, Any]:
        out = {}
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name, sep, raw = part.partition("=")
            if not sep or not name.strip():
                raise ValueError(part)
            out[name.strip()] = value(raw.strip())
        return out

    return parse


class _Refused(ValueError):
    """A nested settings object refused the values it was given (not a conversion error)."""


def _positional(cls: type, converters: list[Callable[[str], Any]]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        parts = [part.strip() for part in text.split(",")]
        if len(parts) != len(converters):
            raise ValueError(text)
        values = [convert(part) for convert, part in zip(converters, parts, strict=True)]
        try:
            return cls(*values)
        except (TypeError, ValueError) as exc:
            raise _Refused(str(exc)) from None

    return parse


def _parser(hint: Any) -> tuple[Callable[[str], Any], str]:
    """A converter from option text to a value of type ``hint``, and what it accepts; a
    type without one is a ``TypeError`` (raised when a family declares its settings)."""
    origin, args = get_origin(hint), get_args(hint)
    simple: dict[Any, tuple[Callable[[str], Any], str]] = {
        bool: (_bool, "true or false (1/0, yes/no)"),
        int: (int, "an integer"),
        float: (float, "a number"),
        str: (str, "a string"),
    }
    if hint in simple:
        return simple[hint]
    if origin is Literal:
        choices = [str(a) for a in args]
        return _choice(choices), f"one of {choices}"
    if origin in (Union, UnionType) and len(args) == 2 and type(None) in args:
        inner, described = _parser(next(a for a in args if a is not type(None)))
        return _optional(inner), f"{described} or none"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item, described = _parser(args[0])
        return _items(item), f"comma-separated values, each {described}"
    if origin in (abc.Mapping, dict) and len(args) == 2 and args[0] is str:
        value, described = _parser(args[1])
        return _pairs(value), f"comma-separated NAME=VALUE pairs, each value {described}"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = get_type_hints(hint)
        names = [f.name for f in dataclasses.fields(hint) if f.init]
        converters = [_parser(hints[name])[0] for name in names]
        return _positional(hint, converters), (
            f"{len(names)} comma-separated values ({', '.join(names)})"
        )
    raise TypeError(f"no --option conversion for the type {hint!r}; exclude the field")


def option_fields(
    settings: type, prefix: str, exclude: Collection[str] = ()
) -> dict[str, OptionField]:
    """The ``--option`` keys of ``settings`` (see the module docstring), by key; fields named
    in ``exclude`` (at any depth) are left out, e.g. those a method fixes itself.

    >>> from rag_multihop.graph import GraphSettings
    >>> sorted(option_fields(GraphSettings, "graph_", exclude={"tol", "max_iter"}))[:4]
    ['graph_damping', 'graph_entity_share', 'graph_pool_cap', 'graph_ppr']
    """
    fields: dict[str, OptionField] = {}

    def collect(cls: type, path: tuple[str, ...]) -> None:
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if not f.init or f.name in exclude:
                continue
            if f.metadata.get(FLATTEN):
                collect(hints[f.name], (*path, f.name))
                continue
            name = f.name.rstrip("_")
            key = f.metadata.get(OPTION) or (name if name.startswith(prefix) else prefix + name)
            if key in fields:
                raise TypeError(f"{settings.__name__}: two fields have the option key {key!r}")
            parse, described = _parser(hints[f.name])
            fields[key] = OptionField(key, (*path, f.name), parse, described)

    collect(settings, ())
    return fields


def settings_from_options(
    settings: type[S],
    options: Mapping[str, Any],
    *,
    prefix: str,
    exclude: Collection[str] = (),
    base: S | None = None,
) -> S:
    """A ``settings`` object from ``--option`` values over the defaults of ``base``
    (default ``settings()``); see the module docstring. Strings are converted by the field's
    type, other values pass as they are; the dataclass's ``__post_init__`` validates.

    Raises:
        ValueError: a key starting with ``prefix`` that names no field (listing the valid
            keys), a text the field's type cannot read, or a value the settings refuse (the
            message names the options given and the settings' own message).
    """
    fields = option_fields(settings, prefix, exclude)
    unknown = sorted(k for k in options if prefix and k.startswith(prefix) and k not in fields)
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(fields), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown --option {unknown[0]!r}{hint}; valid {prefix}* options: "
            f"{', '.join(sorted(fields))}"
        )
    values: dict[tuple[str, ...], Any] = {}
    for key, spec in fields.items():
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, str):
            try:
                value = spec.parse(value)
            except _Refused as exc:
                raise ValueError(f"invalid --option {key}={value!r}: {exc}") from None
            except ValueError:
                raise ValueError(f"option {key} must be {spec.described}, got {value!r}") from None
        values[spec.path] = value
    try:
        return _apply(base if base is not None else settings(), values)
    except (TypeError, ValueError) as exc:
        given = ", ".join(f"{k}={options[k]!r}" for k in fields if k in options)
        raise ValueError(f"invalid --option {given}: {exc}") from None


def _apply(obj: Any, values: Mapping[tuple[str, ...], Any]) -> Any:
    """``obj`` with ``values`` (by field path) replaced; nested objects are rebuilt first."""
    direct = {path[0]: value for path, value in values.items() if len(path) == 1}
    nested: dict[str, dict[tuple[str, ...], Any]] = {}
    for path, value in values.items():
        if len(path) > 1:
            nested.setdefault(path[0], {})[path[1:]] = value
    for name, inner in nested.items():
        direct[name] = _apply(getattr(obj, name), inner)
    return dataclasses.replace(obj, **direct) if direct else obj


@dataclass(frozen=True)
class OptionGroup(Generic[S]):
    """A family's settings class with its prefix, exclusions and bench defaults (``base``),
    as :func:`~rag_multihop.eval.registry.declare_settings` declared it."""

    owner: str
    settings: type[S]
    prefix: str
    exclude: frozenset[str] = frozenset()
    base: S | None = None

    def option_keys(self) -> list[str]:
        """The group's ``--option`` keys."""
        return list(option_fields(self.settings, self.prefix, self.exclude))

    def read(self, options: Mapping[str, Any]) -> S:
        """The settings of a run's ``options`` (see :func:`settings_from_options`)."""
        return settings_from_options(
            self.settings, options, prefix=self.prefix, exclude=self.exclude, base=self.base
        )
