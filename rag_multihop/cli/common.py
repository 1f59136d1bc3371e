"""Helpers the commands share: method selection, the encoder and the data folder."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
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
    """``--methods`` (``all`` = every available method whose requirements the run meets:
    an LLM from ``--llm`` or ``--option llm=``, ``--split test``), else ``default`` where
    available."""
    from rag_multihop.eval.methods import available_methods
    from rag_multihop.eval.registry import REQUIREMENTS

    available = available_methods()
    if args.methods and args.methods != "all":
        return [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.methods != "all" and default is not None:
        return [name for name in default if name in available]
    met = set()
    if getattr(args, "llm", None) or dict(getattr(args, "option", None) or ()).get("llm"):
        met.add("llm")
    if getattr(args, "split", "all") == "test":
        met.add("test-split")
    left_out = {n: s.requires - met for n, s in available.items() if s.requires - met}
    if left_out and args.methods == "all":
        needs = (
            f"{n} ({', '.join(REQUIREMENTS[r] for r in sorted(m))})" for n, m in left_out.items()
        )
        print(f"rag-multihop: 'all' leaves out {'; '.join(needs)}", file=sys.stderr)
    return [name for name in available if name not in left_out]


DATA_DIR_HELP = (
    f"folder holding the named datasets (default: ${DATA_ENV}, else ../shared/datasets "
    "next to the working directory)"
)


def int_at_least(flag: str, low: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers ``>= low``: a bad value exits with status 2
    and a message naming ``flag``, the value and the range.

    >>> int_at_least("--queries", 1)("5")
    5
    >>> int_at_least("--queries", 1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --queries must be a whole number >= 1, got '0'
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(
                f"{flag} must be a whole number >= {low}, got {text!r}"
            )
        return value

    return parse


def check_out_dir(path: Path | None, flag: str = "--out") -> None:
    """Create the output folder now, so that a path that cannot be one fails before any
    work (``ValueError`` naming ``flag`` and the path)."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a file; give a folder for the results")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {str(path)!r} cannot be created: {exc.strerror}") from None
