"""``rag-multihop perf``: the speed benchmark (see :mod:`rag_multihop.eval.perf`)."""

from __future__ import annotations

import argparse
import json
import random
import shlex
from pathlib import Path
from typing import Any

from rag_multihop.cli.bench import _parse_option
from rag_multihop.cli.common import (
    DATA_DIR_HELP,
    add_encoder_argument,
    check_out_dir,
    data_dir,
    encoder_from_args,
    int_at_least,
)


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _command(args: argparse.Namespace) -> str:
    """The full command line of this run, every setting spelled out."""
    parts = [
        "rag-multihop perf",
        f"--datasets {args.datasets}",
        f"--queries {args.queries}",
        f"--methods {args.methods}",
        f"--encoders {shlex.quote(args.encoders)}",
        f"--encode-sample {args.encode_sample}",
        f"--ppr-size {args.ppr_size}",
        f"--encoder {args.encoder}",
        *(["--no-ppr"] if not args.ppr else []),
        *(f"--option {shlex.quote(f'{k}={v}')}" for k, v in args.option),
    ]
    return " ".join(parts)


def cmd_perf(args: argparse.Namespace) -> int:
    from rag_multihop.encoders.registry import ENCODERS, make_encoder
    from rag_multihop.eval import perf
    from rag_multihop.eval.datasets import load_named
    from rag_multihop.eval.methods import check_options, get_method

    folder = data_dir(args.data_dir)
    for flag, value in (("--datasets", args.datasets), ("--methods", args.methods)):
        if not _names(value):
            raise ValueError(f"{flag} names nothing (got {value!r}); give comma-separated names")
    datasets = [load_named(name, folder) for name in _names(args.datasets)]
    methods = _names(args.methods)
    for name in methods:
        get_method(name)  # fail before any timing if a name is unknown
    compared = _names(args.encoders)
    unknown = [name for name in compared if name not in ENCODERS]
    if unknown:
        raise ValueError(f"unknown encoder {unknown[0]!r}; choose from: {', '.join(ENCODERS)}")
    check_out_dir(args.out)
    options = dict(args.option)
    check_options(options)  # before the encoders are timed
    anchor: dict[str, float] | None = None
    encoder_rows: list[perf.EncoderRow] = []
    if compared and args.encode_sample:
        texts = datasets[0].corpus.texts()
        random.Random(0).shuffle(texts)
        anchor, encoder_rows = perf.time_encoders(
            texts[: args.encode_sample],
            {name: make_encoder(name) for name in compared},
            queries=[q.question for q in datasets[0].questions[: args.queries]],
        )
    encoder = encoder_from_args(args)
    ppr_rows, method_rows = [], {}
    for dataset in datasets:
        context = perf.perf_context(dataset, encoder, options)
        queries = min(args.queries, len(dataset.questions))
        if args.ppr:
            ppr_rows.append(perf.time_ppr(context, context.queries()[:queries]))
        method_rows[dataset.name] = [perf.time_method(context, m, queries) for m in methods]
    if args.ppr_size:
        ppr_rows.append(perf.time_synthetic_ppr(args.ppr_size))
    report = perf.report_dict(
        command=_command(args),
        anchor=anchor,
        encoders=encoder_rows,
        ppr=ppr_rows,
        methods=method_rows,
    )
    text = perf.markdown(report)
    if args.out is not None:
        (args.out / "perf.json").write_text(json.dumps(report, indent=2))
        (args.out / "perf.md").write_text(text)
    print(text, end="")
    return 0


def add_perf_parser(sub: Any) -> None:
    """Add the ``perf`` command to the main CLI's subparsers."""
    from rag_multihop.eval.perf import PERF_METHODS

    p = sub.add_parser(
        "perf",
        help="speed benchmark: encoders, PPR and each method against its anchor, as ratios",
        description="Times each stage next to its anchor in one process (absolute times "
        "depend on the machine and its load; compare ratios within one run).",
    )
    p.add_argument(
        "--datasets", default="2wiki,hotpotqa-500", help="comma-separated named datasets"
    )
    p.add_argument("--data-dir", type=Path, default=None, help=DATA_DIR_HELP)
    p.add_argument(
        "--queries",
        type=int_at_least("--queries", 1),
        default=200,
        help="questions timed per dataset",
    )
    p.add_argument(
        "--methods", default=",".join(PERF_METHODS), help="comma-separated methods to time"
    )
    p.add_argument(
        "--encoders",
        default="minilm,minilm-onnx,minilm-int8",
        help="encoders compared with plain sentence-transformers ('' skips the comparison)",
    )
    p.add_argument(
        "--encode-sample",
        type=int_at_least("--encode-sample", 0),
        default=500,
        help="passages of the first dataset (seeded sample) the encoders embed",
    )
    p.add_argument(
        "--no-ppr", dest="ppr", action="store_false", help="skip PPR on the dataset graphs"
    )
    p.add_argument(
        "--ppr-size",
        type=int_at_least("--ppr-size", 0),
        default=100_000,
        help="passages of a synthetic graph for PPR (0 skips it)",
    )
    p.add_argument(
        "--option",
        type=_parse_option,
        action="append",
        default=[],
        help="method option KEY=VALUE, as for bench (repeatable)",
    )
    p.add_argument("--cache-dir", type=Path, default=None, help="embedding cache folder")
    p.add_argument("--out", type=Path, default=None, help="write perf.json and perf.md here")
    add_encoder_argument(p)
    p.set_defaults(func=cmd_perf)
