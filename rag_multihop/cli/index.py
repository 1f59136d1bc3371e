"""``rag-multihop index build|add|delete|compact|attach|info``: a persistent corpus index.

Passages come as JSON Lines (or a JSON list) of ``{"id": str, "text": str, "title": str}``
records (``title`` optional, ``null`` read as none); vectors from ``--vectors FILE.npy``
(one row per passage, in file order) or, without it, from the encoder (``--encoder``;
without it the bundled MiniLM, in bfloat16 on a CPU with AMX or on int8 ONNX elsewhere for a
build of more than 2,000 passages when its fingerprint matches fp32,
:mod:`rag_multihop.encoders.bulk`). ``build --engine ray --input SHARD...`` builds from
JSON Lines / Parquet shards (paths, globs, fsspec URLs; a ``vector``
column skips encoding) with Ray actors (:mod:`rag_multihop.store.ray_build`): a local Ray
with ``--workers`` CPUs, or the cluster at ``--address``. Bad input exits with status 2 and
a message naming the file, record and field; a writer lock held by another process exits
with status 1. ``attach`` stores a method's per-passage values beside the index (a sidecar,
``docs/index.md``): ``--aar MODEL_DIR`` a trained AAR model's passage transforms, ``--rala``
RaLa's token states from ``--encoder`` (which must be the index's encoder).

Example::

    rag-multihop index build --index my.idx --passages corpus.jsonl
    rag-multihop index build --index big.idx --engine ray --workers 8 --input 'shards/*.parquet'
    rag-multihop index add --index my.idx --passages more.jsonl --upsert
    rag-multihop index delete --index my.idx --ids p1,p7
    rag-multihop index compact --index my.idx
    rag-multihop index attach --index my.idx --aar aar-model/
    rag-multihop index info --index my.idx
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rag_multihop.cli.common import add_encoder_argument, encoder_from_args, int_at_least
from rag_multihop.io import read_json, read_records
from rag_multihop.types import Passage


def read_passages(path: Path) -> list[Passage]:
    """The passages of a JSON Lines / JSON file; ``ValueError`` naming the bad record."""
    records = read_records(path, what="passages file")
    passages = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise ValueError(f"{path}: record {number} is not a JSON object")
        unknown = sorted(set(record) - {"id", "text", "title", "metadata"})
        if unknown:
            raise ValueError(
                f"{path}: record {number} has unknown field(s) {unknown}; use id, text, title"
            )
        for field in ("id", "text"):
            if not isinstance(record.get(field), str) or not record[field]:
                raise ValueError(f"{path}: record {number} needs a non-empty string {field!r}")
        title = record.get("title")
        title = "" if title is None else title  # null: no title, as when it is left out
        if not isinstance(title, str):
            raise ValueError(f"{path}: record {number} field 'title' must be a string")
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError(f"{path}: record {number} field 'metadata' must be an object")
        try:  # a field Passage refuses (a lone surrogate from a "\ud800" escape)
            passages.append(Passage(record["id"], record["text"], title, metadata=metadata))
        except ValueError as exc:
            raise ValueError(f"{path}: record {number}: {exc}") from None
    kept = sum(1 for p in passages if p.metadata)
    if kept:
        print(
            f"rag-multihop: note: the index stores no metadata ({kept} passage(s) of {path} "
            "carry some); keep it in your store, keyed by the passage id",
            file=sys.stderr,
        )
    return passages


def _vectors(args: argparse.Namespace, passages: list[Passage], encoder: Any) -> np.ndarray:
    if args.vectors is None:
        texts = [p.embedding_text for p in passages]
        return np.asarray(encoder.encode(texts, show_progress=not args.no_progress))
    path = Path(args.vectors)
    if not path.is_file():
        raise FileNotFoundError(f"vectors file not found: {path}")
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a .npy array file: {exc}") from None
    if vectors.ndim != 2 or vectors.shape[0] != len(passages):
        raise ValueError(
            f"{path} holds an array of shape {vectors.shape}; expected ({len(passages)}, dim), "
            "one row per passage"
        )
    return np.asarray(vectors)


def _ids(args: argparse.Namespace) -> list[str]:
    ids = [part.strip() for part in (args.ids or "").split(",") if part.strip()]
    if args.ids_file is not None:
        data = read_json(args.ids_file, what="ids file")
        if not isinstance(data, list) or not all(isinstance(i, str) for i in data):
            raise ValueError(f"{args.ids_file} must hold a JSON list (or lines) of id strings")
        ids.extend(data)
    if not ids:
        raise ValueError("give the ids to delete with --ids a,b,c or --ids-file FILE")
    return ids


def _check_sources(args: argparse.Namespace) -> None:
    """``--passages`` for the in-process engine, ``--input`` for Ray (exit status 2)."""
    if getattr(args, "engine", "inprocess") == "ray":
        if args.input is None or args.passages is not None or args.vectors is not None:
            raise ValueError(
                "--engine ray reads shards: give --input SHARD... (vectors as a 'vector' "
                "column), not --passages/--vectors"
            )
    elif args.passages is None or getattr(args, "input", None) is not None:
        raise ValueError(
            "give the passages with --passages FILE (--input SHARD... is for --engine ray)"
        )


def _build_with_ray(args: argparse.Namespace, settings: Any) -> Any:
    from rag_multihop.encoders.bulk import bulk_encoder_name
    from rag_multihop.store.progress import progress_bars
    from rag_multihop.store.ray_build import build_with_ray

    encoder = args.encoder
    if encoder is None and not _shards_have_vectors(args.input):
        encoder, reason = bulk_encoder_name(None)
        print(f"rag-multihop: encoder {encoder}: {reason}", file=sys.stderr)
    return build_with_ray(
        args.index,
        args.input,
        settings=settings,
        encoder=encoder,
        address=args.address,
        workers=args.workers,
        progress=progress_bars(enabled=not args.no_progress),
    )


def _shards_have_vectors(inputs: list[str]) -> bool:
    """Whether the first shard's first record (or Parquet schema) has a ``vector`` field."""
    from rag_multihop.store.ray_build import expand_inputs

    files, kind, filesystem = expand_inputs(inputs)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return "vector" in pq.read_schema(files[0], filesystem=filesystem).names
    from pyarrow.fs import LocalFileSystem

    stream = (filesystem or LocalFileSystem()).open_input_stream(files[0], compression="detect")
    with stream as handle:
        head = handle.read(1 << 20)  # the first record is within the first MiB
    try:
        first = json.loads(head.split(b"\n", 1)[0] or b"{}")
    except ValueError:  # the record is longer than the MiB read: the workers will tell
        return False
    return isinstance(first, dict) and "vector" in first


def _sidecar(args: argparse.Namespace, index: Any) -> Any:
    """The sidecar producer ``attach`` was asked for: ``--aar``'s model, or RaLa over
    ``--encoder`` (checked against the encoder the index recorded)."""
    from rag_multihop.encoders import make_encoder

    if args.aar is not None:
        from rag_multihop.association import AssociationReranker
        from rag_multihop.association.indexed import AssociationSidecar

        model = AssociationReranker.load(args.aar)
        return AssociationSidecar.of(model, check=not args.no_vector_check)
    from rag_multihop.coop import RaLaReranker
    from rag_multihop.coop.indexed import RaLaSidecar

    encoder = make_encoder(args.encoder)
    if not index.encoder_matches(encoder):
        raise ValueError(
            f"the encoder {args.encoder!r} is not the model {args.index} was built with: "
            "RaLa's token states must come from the index's encoder"
        )
    return RaLaSidecar(RaLaReranker(encoder, codec=args.codec))


def _merge_policy(args: argparse.Namespace) -> Any:
    """The ``MergePolicy`` of ``--merge-factor`` (``None`` for 0: never merge)."""
    from rag_multihop.store import merge_policy

    return merge_policy(args.merge_factor)


def _merge_factor(text: str) -> int:
    """An argparse ``type``: 0 (never merge) or a whole number >= 2."""
    value = int_at_least("--merge-factor", 0)(text)
    if value == 1:
        raise argparse.ArgumentTypeError("--merge-factor must be 0 (never merge) or at least 2")
    return value


def cmd_index(args: argparse.Namespace) -> int:
    from rag_multihop.store import CorpusIndex, IndexLockedError, IndexSettings

    try:
        if args.action == "build":
            _check_sources(args)
        if args.action == "build" and args.engine == "ray":
            settings = IndexSettings(ann=args.ann, subjects=args.subjects)
            index = _build_with_ray(args, settings)
        elif args.action == "build":
            from rag_multihop.encoders.bulk import bulk_encoder_name
            from rag_multihop.store.progress import progress_bars

            passages = read_passages(args.passages)
            encoder = None
            if args.vectors is None:
                if args.encoder is None:
                    args.encoder, reason = bulk_encoder_name(len(passages))
                    print(f"rag-multihop: encoder {args.encoder}: {reason}", file=sys.stderr)
                encoder = encoder_from_args(args)
            vectors = _vectors(args, passages, encoder)
            settings = IndexSettings(ann=args.ann, subjects=args.subjects)
            index = CorpusIndex.build(
                args.index,
                passages,
                vectors,
                settings=settings,
                encoder=encoder,
                progress=progress_bars(enabled=not args.no_progress),
            )
        elif args.action == "add":
            passages = read_passages(args.passages)
            encoder = encoder_from_args(args) if args.vectors is None else None
            index = CorpusIndex(args.index, merge=_merge_policy(args))
            if encoder is not None and not index.encoder_matches(encoder):
                raise ValueError(
                    f"the encoder {args.encoder!r} is not the model {args.index} was built with"
                )
            vectors = _vectors(args, passages, encoder)
            (index.upsert if args.upsert else index.add)(passages, vectors)
        elif args.action == "delete":
            index = CorpusIndex(args.index, merge=_merge_policy(args))
            index.delete(_ids(args), missing_ok=args.missing_ok)
        elif args.action == "compact":
            index = CorpusIndex(args.index)
            index.compact()
        elif args.action == "attach":
            from rag_multihop.coop.states import HiddenStatesUnavailable

            index = CorpusIndex(args.index)
            try:
                index.attach_sidecar(_sidecar(args, index), replace=args.replace)
            except HiddenStatesUnavailable as exc:
                raise ValueError(f"--rala needs a sentence-transformers --encoder: {exc}") from None
        else:
            index = CorpusIndex(args.index)
        info = index.info()
    except KeyError as exc:
        print(f"rag-multihop: error: {exc.args[0]}", file=sys.stderr)
        return 2
    except FileExistsError as exc:
        print(f"rag-multihop: error: {exc}", file=sys.stderr)
        return 2
    except IndexLockedError as exc:
        print(f"rag-multihop: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(info, indent=2))
    return 0


def add_index_parser(sub: Any) -> None:
    """Add the ``index`` command to the main CLI's subparsers."""
    parser = sub.add_parser("index", help="build, update and inspect a persistent corpus index")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, text in (
        ("build", "create an index from a passages file"),
        ("add", "add passages (--upsert replaces those already there)"),
        ("delete", "delete passages by id"),
        ("compact", "rewrite the live passages as one segment"),
        ("attach", "store AAR transforms (--aar MODEL_DIR) or RaLa token states (--rala)"),
        ("info", "print the index's version, counts, settings and size"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--index", type=Path, required=True, help="the index folder")
        if name in ("build", "add"):
            action.add_argument(
                "--passages",
                type=Path,
                required=name == "add",
                default=None,
                help="JSON Lines of {id, text, title}",
            )
            action.add_argument(
                "--vectors", type=Path, default=None, help=".npy of one vector per passage"
            )
            action.add_argument("--cache-dir", type=Path, default=None, help="embedding cache")
            add_encoder_argument(action)
            action.add_argument("--no-progress", action="store_true", help="hide progress bars")
        if name == "build":
            action.set_defaults(encoder=None)  # chosen by the corpus size (bulk: int8)
            action.add_argument(
                "--engine",
                choices=("inprocess", "ray"),
                default="inprocess",
                help="inprocess (default) or ray: Ray actors over --input shards",
            )
            action.add_argument(
                "--input",
                nargs="+",
                default=None,
                help="--engine ray: JSON Lines / Parquet shards (paths, globs, fsspec URLs) "
                "with id, text, title and optionally vector",
            )
            action.add_argument(
                "--address",
                default=None,
                help="--engine ray: a Ray cluster's address (default: start a local Ray)",
            )
            action.add_argument(
                "--workers",
                type=int_at_least("--workers", 1),
                default=2,
                help="--engine ray: worker actors per pass (a local Ray gets this many CPUs)",
            )
            action.add_argument(
                "--ann",
                default="flat",
                help="vector search per segment: flat (exact) or a FAISS factory like HNSW32",
            )
            action.add_argument(
                "--no-subjects",
                dest="subjects",
                action="store_false",
                help="know each passage by its title only (no subjects read from its text)",
            )
        if name == "add":
            action.add_argument("--upsert", action="store_true", help="replace existing ids")
        if name in ("add", "delete"):
            action.add_argument(
                "--merge-factor",
                type=_merge_factor,
                default=10,
                help="rewrite the small trailing segments when this many of one size tier "
                "trail the index (default 10; 0: never, until compact)",
            )
        if name == "attach":
            from rag_multihop.coop.codecs import CODEC_NAMES, DEFAULT_CODEC

            what = action.add_mutually_exclusive_group(required=True)
            what.add_argument("--aar", type=Path, help="a saved AAR model (rag-multihop aar train)")
            what.add_argument("--rala", action="store_true", help="RaLa's token states")
            add_encoder_argument(action)
            action.add_argument(
                "--codec",
                choices=CODEC_NAMES,
                default=DEFAULT_CODEC,
                help="--rala: how the token vectors are packed",
            )
            action.add_argument(
                "--replace",
                action="store_true",
                help="recompute a sidecar another model or setting made",
            )
            action.add_argument(
                "--no-vector-check",
                action="store_true",
                help="--aar: attach a model of another corpus whose passage ids merely "
                "coincide with this index's (skips comparing its vectors with the index's)",
            )
        if name == "delete":
            action.add_argument("--ids", default=None, help="comma-separated passage ids")
            action.add_argument("--ids-file", type=Path, default=None, help="JSON list of ids")
            action.add_argument("--missing-ok", action="store_true", help="ignore unknown ids")
    parser.set_defaults(func=cmd_index)
