"""Test models shared by the RaLa and sidecar tests."""

from __future__ import annotations

import copy
from typing import Any


def perturbed_copy(model: Any, scale: float = 0.05) -> Any:
    """A copy of a transformer with its layers' weights perturbed by seeded noise: the same
    shape (layers, dimensions), other weights."""
    import torch

    other = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in other.named_parameters():
            if ".layer." in name and name.endswith("weight"):
                parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
    return other
