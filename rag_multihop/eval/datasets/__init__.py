"""Load multi-hop QA benchmarks into a :class:`Corpus` plus gold-annotated questions.

The format is detected from the content, never from the file name; files may be
gzip-compressed (detected by magic bytes), a JSON list or JSON Lines
(:func:`rag_multihop.io.read_json`). Formats are a registry (:data:`FORMATS`, one detector
and one reader each, see :mod:`.formats`): ``native``, ``musique``, ``2wikimultihopqa``,
``hotpotqa`` and ``titles``; :func:`register_format` adds another.

Without a corpus file the corpus is *closed*: the union of the questions' own paragraphs,
deduplicated by ``(title, text)``. With one, the corpus file is the corpus and the questions'
gold passages are matched into it. Passage ids are titles (``"Title#2"``, ``"Title#3"``, ... for
later passages sharing a title, in corpus order).

Example:
    >>> ds = load_dataset("questions.json.gz", "corpus.json.gz")  # doctest: +SKIP
    >>> ds.source_format, len(ds.corpus), ds.questions[0].gold_ids  # doctest: +SKIP
    ('titles', 6119, ('Aretha Franklin', "I Can't See Myself Leaving You"))
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from rag_multihop.corpus import Corpus
from rag_multihop.eval.datasets import formats
from rag_multihop.eval.datasets.base import (
    FORMATS,
    CorpusEntries,
    Dataset,
    DatasetFormat,
    QAExample,
    as_records,
    detect_format,
    preview,
    register_format,
    unique,
)
from rag_multihop.io import read_json
from rag_multihop.validation import check_positive_int

__all__ = [
    "DATASETS",
    "FORMATS",
    "Dataset",
    "DatasetFormat",
    "DatasetSpec",
    "QAExample",
    "formats",
    "load_dataset",
    "load_named",
    "register_format",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetSpec:
    """Where a named dataset lives, relative to the data directory."""

    questions: str
    corpus: str | None
    description: str


DATASETS: Mapping[str, DatasetSpec] = MappingProxyType(
    {
        "2wiki": DatasetSpec(
            questions="2wikimultihopqa/questions.json.gz",
            corpus="2wikimultihopqa/corpus.json.gz",
            description="2WikiMultiHopQA, the 1,000-question HippoRAG 2 benchmark "
            "(6,119 passages, 2 or 4 gold)",
        ),
        "hotpotqa-500": DatasetSpec(
            questions="hotpotqa/hotpot_dev_distractor_500.json.gz",
            corpus=None,
            description="first 500 official HotpotQA dev-distractor questions, closed corpus "
            "(4,937 passages, 2 gold)",
        ),
        "musique-train-100": DatasetSpec(
            questions="musique/musique_train_100.json.gz",
            corpus="musique/musique_train_100_corpus.json.gz",
            description="HippoRAG's 100-question MuSiQue train sample (1,890 passages, "
            "2-4 gold, hop ordered)",
        ),
    }
)
"""Named datasets for :func:`load_named`, as paths inside a data folder."""


def load_named(name: str, data_dir: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a dataset of :data:`DATASETS` from the folder ``data_dir``."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}")
    spec = DATASETS[name]
    paths = [Path(data_dir) / spec.questions]
    if spec.corpus is not None:
        paths.append(Path(data_dir) / spec.corpus)
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(
                f"dataset {name!r}: file not found: {path}; point the data folder (the CLI's "
                f"--data-dir or $RAG_MULTIHOP_DATA) at the folder that holds {spec.questions!r}"
            )
    return load_dataset(paths[0], paths[1] if len(paths) > 1 else None, name=name, limit=limit)


def load_dataset(
    questions_path: str | Path,
    corpus_path: str | Path | None = None,
    *,
    name: str | None = None,
    limit: int | None = None,
    allow_no_gold: bool = False,
) -> Dataset:
    """Load a question file (and optional corpus file) in any format of :data:`FORMATS`.

    ``limit`` keeps the first ``limit`` question records; a closed corpus is then built from
    those records only. A question without gold raises ``ValueError`` unless ``allow_no_gold``,
    which skips it with a logged warning. ``name`` defaults to the native file's name or the
    question file's stem.
    """
    if limit is not None:
        limit = check_positive_int(limit, "limit")
    questions_path = Path(questions_path)
    data = read_json(questions_path, what="dataset file")
    fmt = detect_format(data, str(questions_path))
    if fmt.own_corpus and corpus_path is not None:
        raise ValueError(
            f"{questions_path} is a {fmt.name} dataset that carries its own passages; "
            f"load it without corpus_path (got {corpus_path})"
        )
    if fmt.needs_corpus and corpus_path is None:
        raise ValueError(
            f"{questions_path}: question records without context or paragraphs (format "
            f"{fmt.name!r}) need a corpus file: pass corpus_path to a "
            '[{"title", "text"}] list'
        )
    entries = None if corpus_path is None else _read_corpus(Path(corpus_path))
    try:
        corpus, questions = fmt.read(
            data,
            source=str(questions_path),
            corpus_entries=entries,
            limit=limit,
            allow_no_gold=allow_no_gold,
        )
    except ValueError as exc:
        if str(exc).startswith(str(questions_path)):
            raise
        raise ValueError(f"{questions_path} ({fmt.name}): {exc}") from None
    named = fmt.own_corpus and isinstance(data, dict) and data.get("name")
    return _finish(name or str(named or _stem(questions_path)), corpus, questions, fmt.name)


def _finish(name: str, corpus: Corpus, questions: list[QAExample], fmt: str) -> Dataset:
    if not questions:
        raise ValueError(f"dataset {name!r} has no question with gold passages")
    dupes = [qid for qid, n in Counter(q.id for q in questions).items() if n > 1]
    if dupes:
        raise ValueError(f"dataset {name!r} has duplicate question ids, e.g. {dupes[:5]}")
    logger.info("loaded %s (%s): %d questions, %d passages", name, fmt, len(questions), len(corpus))
    return Dataset(name=name, corpus=corpus, questions=tuple(questions), source_format=fmt)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def _read_corpus(path: Path) -> CorpusEntries:
    """A corpus file's ``(title, text)`` entries, deduplicated, in file order. A text may be a
    list of sentences (HotpotQA's Wikipedia dump), joined as a context's sentences are."""
    entries = as_records(read_json(path, what="dataset file"), str(path))
    titles: list[str] = []
    texts: list[str | list[str]] = []
    for i, entry in enumerate(entries):
        if "title" not in entry or "text" not in entry:
            raise ValueError(
                f"{path}: corpus entry {i} has keys {sorted(entry)}; expected 'title' and 'text'"
            )
        title, text = entry["title"], entry["text"]
        if isinstance(title, int | float) and not isinstance(title, bool):
            title = str(title)
        if not isinstance(title, str) or not title:
            raise ValueError(
                f"{path}: corpus entry {i}: field 'title' must be a non-empty string (titles "
                f"make the passage ids), got {preview(title)}"
            )
        if not isinstance(text, str) and not (
            isinstance(text, list) and all(isinstance(sentence, str) for sentence in text)
        ):
            raise ValueError(
                f"{path}: corpus entry {i}: field 'text' must be a string or a list of "
                f"sentences, got {preview(text)}"
            )
        titles.append(title)
        texts.append(text)
    sentence_lists = [text for text in texts if isinstance(text, list)]
    joined = iter(formats.join_paragraphs(sentence_lists))
    pairs = [
        (title, text.strip() if isinstance(text, str) else next(joined))
        for title, text in zip(titles, texts, strict=True)
    ]
    deduplicated = unique(pairs)
    if len(deduplicated) < len(pairs):
        logger.info(
            "%s: dropped %d duplicate (title, text) entries", path, len(pairs) - len(deduplicated)
        )
    return deduplicated
