"""``rag-multihop demo``: the representative methods on the bundled demo corpus."""

from __future__ import annotations

import argparse
from typing import Any

from rag_multihop.cli.common import (
    add_common_arguments,
    encoder_from_args,
    int_at_least,
    method_names,
)

# The demo shows one representative of each family, headed by multihop (the LLM-free
# multi-hop retriever); `--methods all` shows every ablation.
DEMO_METHODS = (
    "multihop",
    "dense",
    "bm25",
    "li-fusion-dbsf",
    "hs-joiner-dbsf",
    "aar",
    "aar-reverse",
    "graph",
    "pit-boltzmann",
    "pit-linear",
    "bridge-embed",
)


def cmd_demo(args: argparse.Namespace) -> int:
    from rag_multihop.demo import load_demo_dataset, render_rankings
    from rag_multihop.eval.harness import run_benchmark
    from rag_multihop.eval.report import markdown_table

    dataset = load_demo_dataset()
    result = run_benchmark(
        dataset,
        method_names(args, DEMO_METHODS),
        encoder=encoder_from_args(args),
        show_progress=not args.no_progress,
    )
    print(render_rankings(result, top=args.top, max_questions=args.questions))
    print(markdown_table(result))
    if any(name.startswith("aar") for name in result.methods):
        print(
            "aar / aar-reverse are trained on the demo questions' own gold pairs (the paper's "
            "transductive setting); see docs/association.md for held-out numbers."
        )
    return 0


def add_demo_parser(sub: Any) -> None:
    """Add the ``demo`` command to the main CLI's subparsers."""
    demo = sub.add_parser("demo", help="run every method on the bundled demo corpus")
    add_common_arguments(demo)
    demo.add_argument(
        "--top", type=int_at_least("--top", 1), default=5, help="candidates shown per method"
    )
    demo.add_argument(
        "--questions",
        type=int_at_least("--questions", 1),
        default=None,
        help="show only the first N questions",
    )
    demo.set_defaults(func=cmd_demo)
