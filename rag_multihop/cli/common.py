"""Helpers the commands share: method selection, the encoder and the data folder."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rag_multihop.paths import DATA_ENV, data_dir

__all__ = [
    "DATA_DIR_HELP",
    "add_common_arguments",
    "add_encoder_argument",
    "data_dir",
    "encoder_from_args",
    "method_names",
]

if TYPE_CHECKING:
    from rag_multihop.encoders import CachedEncoder


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """``--methods``, ``--cache-dir`` and ``--no-progress``."""
    p.add_argument(
        "--methods",
        help="comma-separated method names, or 'all' (default: the baselines, the strongest "
        "framework peer and one representative per family)",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="embedding cache folder (default: $RAG_MULTIHOP_CACHE or ~/.cache/rag_multihop)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_encoder_argument(p)


def add_encoder_argument(p: argparse.ArgumentParser) -> None:
    """``--encoder NAME`` (one of :data:`~rag_multihop.encoders.registry.ENCODERS`)."""
    from rag_multihop.encoders.registry import DEFAULT_ENCODER, ENCODERS

    p.add_argument(
        "--encoder",
        choices=sorted(ENCODERS),
        default=DEFAULT_ENCODER,
        help="passage and query encoder: "
        + "; ".join(f"{name}: {text}" for name, text in sorted(ENCODERS.items())),
    )


def encoder_from_args(args: argparse.Namespace) -> CachedEncoder:
    from rag_multihop.encoders import CachedEncoder, make_encoder

    return CachedEncoder(make_encoder(getattr(args, "encoder", "minilm")), args.cache_dir)


def method_names(args: argparse.Namespace, default: Sequence[str] | None = None) -> list[str]:
    """``--methods`` (``all`` = every available method), else ``default`` where available."""
    from rag_multihop.eval.methods import available_methods

    available = available_methods()
    if args.methods and args.methods != "all":
        return [m.strip() for m in args.methods.split(",") if m.strip()]
    if default is None or args.methods == "all":
        return list(available)
    return [name for name in default if name in available]


DATA_DIR_HELP = (
    f"folder holding the named datasets (default: ${DATA_ENV}, else ../shared/datasets "
    "next to the working directory)"
)
