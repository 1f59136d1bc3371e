"""Test encoders shared by the store's fingerprint tests."""

from __future__ import annotations

from typing import Any


class ShuffledEncoder:
    """Another 64-dimensional model: the hashing encoder over suffixed words."""

    name, dim = "shuffled", 64

    def __init__(self, base: Any) -> None:
        self.base = base

    def encode(self, texts: list[str], *, show_progress: bool = False) -> Any:
        return self.base.encode([" ".join(w + "q" for w in t.split()) for t in texts])
