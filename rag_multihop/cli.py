"""The ``rag-multihop`` command line: ``demo``, ``bench`` and ``methods``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_multihop.encoders import CachedEncoder

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}


def _default_data_dir() -> Path | None:
    candidate = Path.cwd().parent / "shared" / "datasets"
    return candidate if candidate.is_dir() else None


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--ks must be comma-separated integers, got {text!r}"
        ) from None


def _parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--option must look like KEY=VALUE, got {text!r}")
    return key, value


def _encoder(args: argparse.Namespace) -> CachedEncoder:
    from rag_multihop.encoders import CachedEncoder, default_encoder

    return CachedEncoder(default_encoder(), args.cache_dir)


# The demo shows one representative of each family; `--methods all` shows every ablation.
DEMO_METHODS = (
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


def _method_names(args: argparse.Namespace, default: Sequence[str] | None = None) -> list[str]:
    """``--methods`` (``all`` = every available method), else ``default`` where available."""
    from rag_multihop.eval.methods import available_methods

    available = available_methods()
    if args.methods and args.methods != "all":
        return [m.strip() for m in args.methods.split(",") if m.strip()]
    if default is None or args.methods == "all":
        return list(available)
    return [name for name in default if name in available]


def cmd_methods(args: argparse.Namespace) -> int:
    from rag_multihop.eval.methods import available_methods

    for name, spec in sorted(available_methods().items()):
        print(f"{name:<24} {spec.family:<5} {spec.description}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from rag_multihop.eval.datasets import load_dataset, load_named
    from rag_multihop.eval.harness import run_benchmark
    from rag_multihop.eval.report import markdown_table, write_report

    if args.questions:
        dataset = load_dataset(args.questions, args.corpus, limit=args.limit)
    elif args.dataset:
        data_dir = args.data_dir or _default_data_dir()
        if data_dir is None:
            raise SystemExit("no --data-dir given and ../shared/datasets does not exist")
        dataset = load_named(args.dataset, data_dir, limit=args.limit)
    else:
        raise SystemExit("give --dataset NAME or --questions FILE [--corpus FILE]")
    result = run_benchmark(
        dataset,
        _method_names(args),
        encoder=_encoder(args),
        ks=args.ks,
        options={**({"llm": args.llm} if args.llm else {}), **dict(args.option)},
        show_progress=not args.no_progress,
    )
    paths = write_report(result, args.out)
    print(markdown_table(result))
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rag_multihop.demo import load_demo_dataset, render_rankings
    from rag_multihop.eval.harness import run_benchmark
    from rag_multihop.eval.report import markdown_table

    dataset = load_demo_dataset()
    result = run_benchmark(
        dataset,
        _method_names(args, DEMO_METHODS),
        encoder=_encoder(args),
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-multihop", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--methods",
            help="comma-separated method names, or 'all' (bench default: all; demo default: "
            "one representative per family)",
        )
        p.add_argument(
            "--cache-dir",
            type=Path,
            default=None,
            help="embedding cache folder (default: $RAG_MULTIHOP_CACHE or ~/.cache/rag_multihop)",
        )
        p.add_argument("--no-progress", action="store_true", help="hide progress bars")

    demo = sub.add_parser("demo", help="run every method on the bundled demo corpus")
    common(demo)
    demo.add_argument("--top", type=int, default=5, help="candidates shown per method")
    demo.add_argument("--questions", type=int, default=None, help="show only the first N questions")
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="benchmark methods on a dataset")
    common(bench)
    bench.add_argument("--dataset", help="a named dataset (2wiki, hotpotqa-500, musique-train-100)")
    bench.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder holding the named datasets (default: ../shared/datasets)",
    )
    bench.add_argument("--questions", type=Path, help="a question file in any supported format")
    bench.add_argument("--corpus", type=Path, help="its corpus file, when separate")
    bench.add_argument("--limit", type=int, default=None, help="use the first N questions")
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
        help="litellm model string for LLM-driven methods (e.g. openai/gpt-4o-mini); "
        "the same as --option llm=MODEL",
    )
    bench.add_argument("--out", type=Path, required=True, help="output folder")
    bench.set_defaults(func=cmd_bench)

    methods = sub.add_parser("methods", help="list the available methods")
    methods.set_defaults(func=cmd_methods)

    llm = sub.add_parser("llm", help="the embedded local language model")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    serve = llm_sub.add_parser(
        "serve",
        help="start the local model (llama.cpp server on 127.0.0.1) and print its "
        "OpenAI-compatible address until interrupted",
    )
    serve.add_argument(
        "--model", default="smollm2-135m", help="which local model to serve (default: %(default)s)"
    )
    serve.set_defaults(func=cmd_llm_serve)

    from rag_multihop.association.cli import add_aar_parser

    add_aar_parser(sub)
    return parser


def cmd_llm_serve(args: argparse.Namespace) -> int:
    from rag_multihop.llm.local import serve

    return serve(args.model)


def _llm_errors() -> tuple[type[Exception], ...]:
    """The LLM layer's error base class, when its extra (pydantic) is installed."""
    try:
        from rag_multihop.llm.errors import LLMError
    except ImportError:
        return ()
    return (LLMError,)


def main(argv: Sequence[str] | None = None) -> int:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    args = build_parser().parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    handler = logging.StreamHandler()
    handler.setLevel(level)  # some libraries (bm25s) set their own loggers to DEBUG
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    if getattr(args, "no_progress", False):
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    handled: tuple[type[Exception], ...] = (ValueError, FileNotFoundError, ImportError)
    try:
        return int(args.func(args))
    except handled + _llm_errors() as exc:
        print(f"rag-multihop: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
