"""``rag-multihop bench`` (methods on a dataset, with a report) and ``rag-multihop methods``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rag_multihop.cli.common import (
    DATA_DIR_HELP,
    add_common_arguments,
    check_out_dir,
    data_dir,
    encoder_from_args,
    int_at_least,
    method_names,
)
from rag_multihop.secrets import check_env_var_name, check_model_name, looks_like_secret

BENCH_METHODS = ("dense", "bm25", "hs-joiner-dbsf", "aar", "pit-boltzmann", "bridge")
"""``bench``'s default: the baselines, the strongest framework peer of the published tables
(Haystack's DBSF joiner) and one method per family; ``--methods all`` runs everything."""


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        ks = ()
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(
            f"--ks must be comma-separated integers >= 1, got {text!r}"
        )
    return ks


def _parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        shown = "a value that looks like a key (not shown)" if looks_like_secret(text) else text
        raise argparse.ArgumentTypeError(f"--option must look like KEY=VALUE, got {shown!r}")
    try:
        if key == "llm":
            _parse_llm(value, "--option llm")
        elif key.endswith("api_key_env"):
            check_env_var_name(value, f"--option {key}")
    except ValueError as exc:
        message = str(exc)  # raised anew outside the handler: no chained error holds the value
    else:
        return key, value
    raise argparse.ArgumentTypeError(message)


def _parse_llm(text: str, name: str = "--llm") -> str:
    """``--llm``: a litellm model string, refused without echo when it looks like a key."""
    try:
        return check_model_name(text, name)
    except ValueError as exc:
        message = str(exc)
    raise argparse.ArgumentTypeError(message)


def cmd_methods(args: argparse.Namespace) -> int:
    from rag_multihop.eval.methods import available_methods

    for name, spec in sorted(available_methods().items()):
        print(f"{name:<24} {spec.family:<5} {spec.description}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from rag_multihop.eval.datasets import load_dataset, load_named
    from rag_multihop.eval.harness import run_benchmark
    from rag_multihop.eval.report import markdown_table, write_report
    from rag_multihop.eval.splits import split_dataset

    if args.questions:
        dataset = load_dataset(args.questions, args.corpus, limit=args.limit)
    elif args.dataset:
        dataset = load_named(args.dataset, data_dir(args.data_dir), limit=args.limit)
    else:
        raise ValueError("give --dataset NAME or --questions FILE [--corpus FILE]")
    dataset = split_dataset(dataset, args.split)
    check_out_dir(args.out)
    result = run_benchmark(
        dataset,
        method_names(args, BENCH_METHODS),
        encoder=encoder_from_args(args),
        ks=args.ks,
        options={**({"llm": args.llm} if args.llm else {}), **dict(args.option)},
        show_progress=not args.no_progress,
    )
    paths = write_report(result, args.out)
    print(markdown_table(result))
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def add_bench_parsers(sub: Any) -> None:
    """Add the ``bench`` and ``methods`` commands to the main CLI's subparsers."""
    bench = sub.add_parser("bench", help="benchmark methods on a dataset")
    add_common_arguments(bench)
    bench.add_argument("--dataset", help="a named dataset (2wiki, hotpotqa-500, musique-train-100)")
    bench.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=DATA_DIR_HELP,
    )
    bench.add_argument("--questions", type=Path, help="a question file in any supported format")
    bench.add_argument("--corpus", type=Path, help="its corpus file, when separate")
    bench.add_argument(
        "--limit", type=int_at_least("--limit", 1), default=None, help="use the first N questions"
    )
    bench.add_argument(
        "--split",
        choices=("all", "tune", "test"),
        default="all",
        help="a fixed, seeded half of the questions: choose defaults on 'tune', report on "
        "'test' (default: all questions)",
    )
    bench.add_argument("--ks", type=_parse_ks, default=(1, 2, 5, 10, 20), help="recall cut-offs")
    bench.add_argument(
        "--option",
        type=_parse_option,
        action="append",
        default=[],
        help="method option KEY=VALUE (repeatable)",
    )
    bench.add_argument(
        "--llm",
        metavar="MODEL",
        type=_parse_llm,
        help="litellm model string for LLM-driven methods (e.g. openai/gpt-4o-mini); "
        "the same as --option llm=MODEL",
    )
    bench.add_argument("--out", type=Path, required=True, help="output folder")
    bench.set_defaults(func=cmd_bench)

    methods = sub.add_parser("methods", help="list the available methods")
    methods.set_defaults(func=cmd_methods)
