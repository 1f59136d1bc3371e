"""``rag-multihop llm serve``: the embedded local language model for other programs."""

from __future__ import annotations

import argparse
from typing import Any


def add_llm_parser(sub: Any) -> None:
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


def cmd_llm_serve(args: argparse.Namespace) -> int:
    from rag_multihop.llm.local import serve

    return serve(args.model)
