"""The two helpers behind every method's ``settings=`` argument.

A method's class takes ``settings: XSettings | None`` plus keyword overrides (``None`` = not
given); :func:`resolve_settings` merges them, so the frozen dataclass validates every knob
once, in its ``__post_init__``. :class:`SettingsField` keeps the old per-knob attributes
(``retriever.damping``) readable as views of ``self.settings``.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class ToySettings:
    ...     alpha: float = 0.1
    ...     k: int = 5
    >>> class Toy:
    ...     alpha = SettingsField()
    ...     def __init__(self, settings=None, *, alpha=None):
    ...         self.settings = resolve_settings(ToySettings, settings, alpha=alpha)
    >>> Toy(alpha=0.3).alpha, Toy(ToySettings(k=2)).settings
    (0.3, ToySettings(alpha=0.1, k=2))
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

S = TypeVar("S")


def resolve_settings(cls: type[S], settings: S | None, **overrides: Any) -> S:
    """``settings`` (default ``cls()``) with the overrides that are not ``None`` applied;
    ``TypeError`` when ``settings`` is not a ``cls``."""
    if settings is None:
        settings = cls()
    elif not isinstance(settings, cls):
        raise TypeError(f"settings must be a {cls.__name__}, got {type(settings).__name__}")
    given = {key: value for key, value in overrides.items() if value is not None}
    return dataclasses.replace(settings, **given) if given else settings  # type: ignore[type-var]


class SettingsField:
    """A read-only attribute showing the same-named field of the owner's ``settings``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.settings, self.name)  # type: ignore[attr-defined]

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(
            f"{self.name} is read-only: it shows settings.{self.name}; build a new object "
            f"with settings=... or {self.name}=..."
        )
