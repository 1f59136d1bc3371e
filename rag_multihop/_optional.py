"""Import optional dependencies with an error that names the install command."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise ``ImportError`` naming ``pip install 'rag-multihop[extra]'``.

    >>> require("json", extra="none").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module!r} is needed for this feature but is not installed; "
            f"install it with: pip install 'rag-multihop[{extra}]'"
        ) from exc
