"""``rag-multihop aar train``: train and save an association model from the command line.

Passages and gold come from a named dataset (``--dataset``) or a question file
(``--questions`` [``--corpus``]); or passages alone from ``--corpus`` (a JSON list or JSON
Lines of ``{"id", "title", "text"}``; ``id`` defaults to a unique title). Pairs come from
``--pair-source`` (``gold``, ``corpus`` = label-free title mentions, ``gold+corpus``,
``none``) plus any ``--pairs FILE`` (JSON Lines, one list of ids used together a line: a
pair or a session; or a JSON list of such lists; see
:func:`~rag_multihop.association.pairs.load_pairs`).

Example:
    rag-multihop aar train --dataset 2wiki --out models/aar-2wiki
    rag-multihop aar train --corpus passages.jsonl --pairs sessions.jsonl --out models/aar
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rag_multihop.association.model import DEFAULT_LAMBDA, DEFAULT_MODE, SCORING_MODES
from rag_multihop.association.pairs import PairSet, corpus_pairs, load_pairs
from rag_multihop.association.training import TrainingConfig
from rag_multihop.cli.common import DATA_DIR_HELP, add_encoder_argument, data_dir, int_at_least
from rag_multihop.corpus import Corpus
from rag_multihop.io import read_records
from rag_multihop.types import Passage

PAIR_SOURCE_CHOICES = ("gold", "corpus", "gold+corpus", "none")


def add_aar_parser(subparsers: Any) -> None:
    """Add the ``aar`` command (with its ``train`` subcommand) to the main CLI's subparsers."""
    aar = subparsers.add_parser("aar", help="association-augmented reranking (AAR) models")
    commands = aar.add_subparsers(dest="aar_command", required=True)
    train = commands.add_parser("train", help="train an association model and save it")
    source = train.add_argument_group("passages and gold (one of)")
    source.add_argument("--dataset", help="a named dataset (2wiki, hotpotqa-500, ...)")
    source.add_argument("--questions", type=Path, help="a question file in any supported format")
    source.add_argument(
        "--corpus", type=Path, help="its corpus file; alone: passages without questions"
    )
    train.add_argument("--data-dir", type=Path, help=DATA_DIR_HELP)
    train.add_argument(
        "--limit", type=int_at_least("--limit", 1), default=None, help="use the first N questions"
    )
    train.add_argument(
        "--pair-source",
        choices=PAIR_SOURCE_CHOICES,
        default=None,
        help="built-in pairs (default: gold with questions, none without)",
    )
    train.add_argument(
        "--pairs",
        type=Path,
        action="append",
        default=[],
        help="JSON Lines of passage ids used together, one pair or session a line "
        "(or a JSON list of such lists); repeatable",
    )
    train.add_argument("--out", type=Path, required=True, help="model directory to write")
    add_encoder_argument(train)
    defaults = TrainingConfig()
    train.add_argument(
        "--epochs", type=int, default=defaults.epochs, help=f"epochs (default {defaults.epochs})"
    )
    train.add_argument(
        "--batch-size",
        type=int,
        default=defaults.batch_size,
        help=f"pairs per batch (default {defaults.batch_size})",
    )
    train.add_argument(
        "--seed", type=int, default=defaults.seed, help=f"random seed (default {defaults.seed})"
    )
    train.add_argument(
        "--threads",
        type=int,
        default=defaults.threads,
        help=f"torch threads while training (default: {defaults.threads})",
    )
    train.add_argument(
        "--lambda", dest="lambda_", type=float, default=DEFAULT_LAMBDA, help="saved blend weight"
    )
    train.add_argument(
        "--mode", choices=sorted(SCORING_MODES), default=DEFAULT_MODE, help="saved scoring mode"
    )
    train.add_argument("--cache-dir", type=Path, default=None, help="embedding cache folder")
    train.add_argument("--no-progress", action="store_true", help="hide progress bars")
    train.set_defaults(func=cmd_aar_train)


def _passages(args: argparse.Namespace) -> tuple[Corpus, list[Any]]:
    """The corpus and the questions (empty without a question source)."""
    from rag_multihop.eval.datasets import load_dataset, load_named

    if args.dataset and args.questions:
        raise ValueError("give either --dataset or --questions, not both")
    if args.dataset:
        dataset = load_named(args.dataset, data_dir(args.data_dir), limit=args.limit)
    elif args.questions:
        dataset = load_dataset(args.questions, args.corpus, limit=args.limit)
    elif args.corpus:
        return read_corpus(args.corpus), []
    else:
        raise ValueError("give --dataset NAME, --questions FILE [--corpus FILE] or --corpus FILE")
    return dataset.corpus, list(dataset.questions)


def read_corpus(path: str | os.PathLike[str]) -> Corpus:
    """Passages from a JSON list or JSON Lines of ``{"id", "title", "text"}`` objects."""
    path = Path(path)
    records = read_records(path, what="corpus file")
    passages = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or "text" not in record:
            raise ValueError(f"{path}: passage {i} must be an object with 'text'")
        pid = record.get("id", record.get("title"))
        if not pid:
            raise ValueError(f"{path}: passage {i} has neither 'id' nor 'title'")
        passages.append(Passage(str(pid), str(record["text"]), title=str(record.get("title", ""))))
    return Corpus(passages)


def _pairs(args: argparse.Namespace, corpus: Corpus, questions: list[Any]) -> PairSet:
    source = args.pair_source or ("gold" if questions else "none")
    if "gold" in source and not questions:
        raise ValueError("--pair-source gold needs questions (--dataset or --questions)")
    pairs = PairSet()
    if "gold" in source:
        pairs = pairs | PairSet.from_gold(questions)
    if "corpus" in source:
        pairs = pairs | corpus_pairs(corpus)
    for path in args.pairs:
        pairs = pairs | load_pairs(path)
    if not pairs:
        raise ValueError("no association pairs: choose --pair-source or give --pairs FILE")
    pairs.validate(set(corpus.ids))
    return pairs


def cmd_aar_train(args: argparse.Namespace) -> int:
    from rag_multihop.association.reranker import AssociationReranker
    from rag_multihop.cli.common import check_out_dir, encoder_from_args

    config = TrainingConfig(  # every knob checked before any work
        epochs=args.epochs, batch_size=args.batch_size, seed=args.seed, threads=args.threads
    )
    corpus, questions = _passages(args)
    pairs = _pairs(args, corpus, questions)
    check_out_dir(args.out)
    encoder = encoder_from_args(args)
    reranker = AssociationReranker(
        encoder=encoder, lambda_=args.lambda_, mode=args.mode, training=config
    )
    stats = pairs.stats()
    print(
        f"{stats.pairs} pairs over {stats.passages} passages, by source: {stats.sources} "
        f"(pair source {pairs.pair_source!r}: first-stage margin "
        f"{reranker.settings.margin_for(pairs.pair_source)} by default)"
    )
    vectors = encoder.encode(corpus.texts(), show_progress=not args.no_progress)
    reranker.fit(corpus.ids, vectors, pairs, show_progress=not args.no_progress)
    path = reranker.save(args.out)
    trained = reranker.provenance["training_stats"]
    print(
        f"trained in {trained['seconds']:.1f} s ({trained['steps']} steps, final loss "
        f"{trained['final_loss']:.3f}, in-batch accuracy {trained['final_accuracy']:.3f}); "
        f"saved to {path}"
    )
    return 0
