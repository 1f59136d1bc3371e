"""The encoder protocol: texts in, L2-normalised float32 rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns texts into unit-length vectors.

    ``name`` identifies the model (it keys the embedding cache and is written into saved
    models); ``dim`` is the vector dimension.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """An ``(len(texts), dim)`` float32 array of L2-normalised rows."""
        ...
