"""Load multi-hop QA benchmarks into a :class:`Corpus` plus gold-annotated questions.

The format is detected from the content, never from the file name; files may be gzip-compressed
(detected by magic bytes), a JSON list or JSON Lines. Supported formats (see :data:`FORMATS`):

- ``native``: this project's single JSON object ``{"name", "passages", "questions"}``.
- ``hotpotqa`` / ``2wikimultihopqa``: the official files, ``context: [[title, [sentence, ...]]]``
  with ``supporting_facts: [[title, sentence_index]]``.
- ``musique``: official MuSiQue (JSON Lines) or HippoRAG's copies (JSON list), ``paragraphs`` with
  ``is_supporting`` and ``question_decomposition`` for the hop order.
- ``titles``: questions whose ``supporting_facts`` are titles (HippoRAG/GFM-RAG 2Wiki copies); needs
  a separate ``[{"title", "text"}]`` corpus file.

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

import gzip
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rag_multihop.corpus import Corpus
from rag_multihop.types import Passage
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)

FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "native": 'one JSON object {"name", "passages": [{"id", "title", "text"}], "questions": '
        '[{"id", "question", "answer", "gold_ids", ...}]} (no corpus file)',
        "hotpotqa": "official HotpotQA: records with context [[title, [sentences]]] and "
        "supporting_facts [[title, sentence_index]]",
        "2wikimultihopqa": "official 2WikiMultiHopQA: HotpotQA layout plus evidences",
        "musique": "MuSiQue (official JSON Lines or HippoRAG's JSON list): records with paragraphs "
        "[{idx, title, paragraph_text, is_supporting}] and question_decomposition",
        "titles": "records whose supporting_facts are titles, with a separate "
        '[{"title", "text"}] corpus file (HippoRAG / GFM-RAG 2Wiki copies)',
    }
)
"""Detected format name -> what it looks like; error messages are built from it."""

_2WIKI_TYPES = frozenset({"inference", "compositional", "bridge_comparison"})
# Fields mapped onto QAExample fields or into the corpus; every other field goes to metadata.
_MAPPED_FIELDS = frozenset(
    {"id", "_id", "question", "answer", "answer_aliases", "type", "context", "paragraphs"}
)


@dataclass(frozen=True)
class QAExample:
    """A question with its answers and gold passage ids.

    ``answers`` holds the answer first, then its aliases (deduplicated; empty when the file has
    no answers). ``gold_ids`` are passage ids in the dataset's corpus, in hop order when
    ``hop_ordered``. ``metadata`` keeps the source record's other fields (``level``,
    ``evidences``, ``supporting_facts``, ``question_decomposition``, ...).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...]
    hop_ordered: bool
    type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "answers", tuple(self.answers))
        object.__setattr__(self, "gold_ids", tuple(self.gold_ids))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))


@dataclass(frozen=True)
class Dataset:
    """A corpus and the questions over it; ``source_format`` is a key of :data:`FORMATS`."""

    name: str
    corpus: Corpus
    questions: tuple[QAExample, ...]
    source_format: str


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
"""Named shared datasets for :func:`load_named`."""


@dataclass(frozen=True)
class _RawQuestion:
    """A question translated from its source record, gold still given as ``(title, text)``."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[tuple[str, str | None], ...]
    hop_ordered: bool
    type: str | None
    metadata: Mapping[str, Any]
    context: tuple[tuple[str, str], ...]


def load_named(name: str, data_dir: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a dataset of :data:`DATASETS` from ``data_dir`` (e.g. ``../shared/datasets``)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}")
    spec = DATASETS[name]
    paths = [Path(data_dir) / spec.questions]
    if spec.corpus is not None:
        paths.append(Path(data_dir) / spec.corpus)
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(
                f"dataset {name!r}: file not found: {path}; pass --data-dir pointing at the "
                f"folder that holds {spec.questions!r} (the shared sets live in ../shared/datasets)"
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
    data = _read_json(questions_path)

    if isinstance(data, dict) and "passages" in data and "questions" in data:
        if corpus_path is not None:
            raise ValueError(
                f"{questions_path} is a native dataset that carries its own passages; "
                f"load it without corpus_path (got {corpus_path})"
            )
        corpus, questions = _parse_native(data, limit, allow_no_gold)
        name = name or str(data.get("name") or _stem(questions_path))
        return _finish(name, corpus, questions, "native")

    records = _as_records(data, questions_path)[:limit]
    fmt = _detect(records[0], has_corpus=corpus_path is not None)
    if fmt == "musique":
        raw = [_musique_question(i, r) for i, r in enumerate(records)]
    elif fmt == "titles":
        raw = [_titles_question(i, r) for i, r in enumerate(records)]
    else:
        separator = _sentence_separator(records)
        raw = [_context_question(i, r, separator) for i, r in enumerate(records)]

    if corpus_path is not None:
        entries = _read_corpus(Path(corpus_path))
    else:
        entries = _unique(pair for q in raw for pair in q.context)
    corpus = _build_corpus(entries)
    questions = _resolve_gold(raw, corpus, allow_no_gold)
    return _finish(name or _stem(questions_path), corpus, questions, fmt)


def _finish(name: str, corpus: Corpus, questions: list[QAExample], fmt: str) -> Dataset:
    if not questions:
        raise ValueError(f"dataset {name!r} has no question with gold passages")
    dupes = [qid for qid, n in Counter(q.id for q in questions).items() if n > 1]
    if dupes:
        raise ValueError(f"dataset {name!r} has duplicate question ids, e.g. {dupes[:5]}")
    logger.info("loaded %s (%s): %d questions, %d passages", name, fmt, len(questions), len(corpus))
    return Dataset(name=name, corpus=corpus, questions=tuple(questions), source_format=fmt)


# --- reading ------------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    """Parse a (possibly gzip-compressed) JSON or JSON Lines file."""
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8-sig")
    if not text.strip():
        raise ValueError(f"{path} is empty; expected JSON or JSON Lines records")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as line_exc:
                raise ValueError(
                    f"{path} is neither JSON ({exc.msg}) nor JSON Lines "
                    f"(line {lineno}: {line_exc.msg})"
                ) from None
        return records


def _as_records(data: Any, path: Path) -> list[dict[str, Any]]:
    records = [data] if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(f"{path} must hold a JSON list or JSON Lines of objects")
    if not records:
        raise ValueError(f"{path} holds no records (empty list)")
    bad = next((i for i, r in enumerate(records) if not isinstance(r, dict)), None)
    if bad is not None:
        raise ValueError(f"{path}: record {bad} is a {type(records[bad]).__name__}, not an object")
    return records


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def _detect(first: Mapping[str, Any], *, has_corpus: bool) -> str:
    if "paragraphs" in first:
        return "musique"
    if "context" in first and "supporting_facts" in first:
        is_2wiki = "evidences" in first or first.get("type") in _2WIKI_TYPES
        return "2wikimultihopqa" if is_2wiki else "hotpotqa"
    if "supporting_facts" in first:
        if not has_corpus:
            raise ValueError(
                "question records without context or paragraphs (format 'titles') need a "
                'corpus file: pass corpus_path to a [{"title", "text"}] list'
            )
        return "titles"
    supported = "; ".join(f"{fmt}: {desc}" for fmt, desc in FORMATS.items())
    raise ValueError(
        f"unknown dataset format; the first record has keys {sorted(first)}. "
        f"Supported formats: {supported}"
    )


def _read_corpus(path: Path) -> list[tuple[str, str]]:
    entries = _as_records(_read_json(path), path)
    pairs = []
    for i, entry in enumerate(entries):
        if "title" not in entry or "text" not in entry:
            raise ValueError(
                f"{path}: corpus entry {i} has keys {sorted(entry)}; expected 'title' and 'text'"
            )
        pairs.append((str(entry["title"]), str(entry["text"]).strip()))
    unique = _unique(pairs)
    if len(unique) < len(pairs):
        logger.info(
            "%s: dropped %d duplicate (title, text) entries", path, len(pairs) - len(unique)
        )
    return unique


# --- record translation -------------------------------------------------------------------------


def _question_id(index: int, record: Mapping[str, Any]) -> str:
    """The record's ``id`` or ``_id``; its position in the file when it has neither."""
    value = record.get("id", record.get("_id"))
    return str(index) if value is None else str(value)


def _common(index: int, record: Mapping[str, Any]) -> dict[str, Any]:
    qid = _question_id(index, record)
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question {qid}: 'question' must be a non-empty string")
    answer = record.get("answer")
    aliases = record.get("answer_aliases") or []
    answers = _unique(str(a) for a in [answer, *aliases] if a is not None and str(a))
    metadata = {k: v for k, v in record.items() if k not in _MAPPED_FIELDS}
    return {"id": qid, "question": question, "answers": tuple(answers), "metadata": metadata}


def _type(record: Mapping[str, Any]) -> str | None:
    value = record.get("type")
    return None if value is None else str(value)


def _sentence_separator(records: Sequence[Mapping[str, Any]]) -> str:
    """``""`` when sentences carry their own leading space (HotpotQA), else ``" "`` (2Wiki)."""
    leading = total = 0
    for record in records:
        for _, sentences in record.get("context") or []:
            for sentence in sentences[1:]:
                total += 1
                leading += sentence[:1].isspace()
    return "" if total and leading * 2 >= total else " "


def _join_sentences(sentences: Sequence[str], separator: str) -> str:
    parts: list[str] = []
    for sentence in sentences:
        if parts and not (parts[-1][-1:].isspace() or sentence[:1].isspace()):
            parts.append(separator)
        parts.append(sentence)
    return "".join(parts).strip()


def _context_question(index: int, record: Mapping[str, Any], separator: str) -> _RawQuestion:
    """HotpotQA / 2WikiMultiHopQA: gold = distinct supporting titles, in the own context."""
    common = _common(index, record)
    context = tuple(
        (str(title), _join_sentences(sents, separator))
        for title, sents in record.get("context") or []
    )
    own: dict[str, str] = {}
    for title, text in context:
        own.setdefault(title, text)
    gold = []
    for fact in record.get("supporting_facts") or []:
        title = str(fact[0] if isinstance(fact, list) else fact)
        if title not in own:
            raise ValueError(
                f"question {common['id']}: supporting title {title!r} is not in its own context"
            )
        if (title, own[title]) not in gold:
            gold.append((title, own[title]))
    return _RawQuestion(
        **common,
        gold=tuple(gold),
        hop_ordered=False,
        type=_type(record),
        context=context,
    )


def _musique_question(index: int, record: Mapping[str, Any]) -> _RawQuestion:
    """MuSiQue: gold = supporting paragraphs, ordered by ``question_decomposition`` when it
    points at exactly the supporting paragraphs."""
    common = _common(index, record)
    paragraphs = record.get("paragraphs") or []
    by_idx = {p.get("idx", i): p for i, p in enumerate(paragraphs)}
    supporting = [p.get("idx", i) for i, p in enumerate(paragraphs) if p.get("is_supporting")]
    steps = _unique(
        s.get("paragraph_support_idx") for s in record.get("question_decomposition") or []
    )
    hop_ordered = bool(steps) and sorted(steps, key=str) == sorted(supporting, key=str)
    if supporting and not hop_ordered:
        logger.debug(
            "question %s: decomposition does not match supporting paragraphs", common["id"]
        )
    order = steps if hop_ordered else supporting
    gold = tuple((str(by_idx[i]["title"]), str(by_idx[i]["paragraph_text"]).strip()) for i in order)
    qid = common["id"]
    return _RawQuestion(
        **common,
        gold=gold,
        hop_ordered=hop_ordered,
        type=qid.split("__", 1)[0] if "__" in qid else None,
        context=tuple((str(p["title"]), str(p["paragraph_text"]).strip()) for p in paragraphs),
    )


def _titles_question(index: int, record: Mapping[str, Any]) -> _RawQuestion:
    """Supporting facts given as titles (or ``[title, sentence_index]`` pairs), no text."""
    common = _common(index, record)
    titles = _unique(
        str(f[0] if isinstance(f, list) else f) for f in record.get("supporting_facts") or []
    )
    return _RawQuestion(
        **common,
        gold=tuple((title, None) for title in titles),
        hop_ordered=False,
        type=_type(record),
        context=(),
    )


def _parse_native(
    data: Mapping[str, Any], limit: int | None, allow_no_gold: bool
) -> tuple[Corpus, list[QAExample]]:
    passages = []
    for i, p in enumerate(data["passages"]):
        if not isinstance(p, dict) or "id" not in p or "text" not in p:
            raise ValueError(f"native passage {i} must be an object with 'id' and 'text'")
        passages.append(
            Passage(id=str(p["id"]), title=str(p.get("title", "")), text=str(p["text"]))
        )
    corpus = Corpus(passages)
    questions = []
    for i, record in enumerate(data["questions"][:limit]):
        common = _common(i, record)
        gold_ids = tuple(str(g) for g in record.get("gold_ids") or [])
        missing = [g for g in gold_ids if g not in corpus]
        if missing:
            raise ValueError(f"question {common['id']}: gold ids {missing} are not passage ids")
        if not gold_ids:
            _no_gold(common["id"], allow_no_gold)
            continue
        common["metadata"].pop("gold_ids", None)
        common["metadata"].pop("hop_ordered", None)
        questions.append(
            QAExample(
                **common,
                gold_ids=gold_ids,
                hop_ordered=bool(record.get("hop_ordered", False)),
                type=_type(record),
            )
        )
    return corpus, questions


# --- corpus and gold ----------------------------------------------------------------------------


def _unique(items: Any) -> list[Any]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))


def _build_corpus(entries: Sequence[tuple[str, str]]) -> Corpus:
    """Passages with title ids; later passages sharing a title get ``title#2``, ``title#3``..."""
    titles = {title for title, _ in entries}
    next_n: dict[str, int] = {}
    passages = []
    for i, (title, text) in enumerate(entries):
        if not title:
            raise ValueError(f"corpus entry {i} has an empty title; titles make the passage ids")
        if title not in next_n:
            pid, next_n[title] = title, 2
        else:
            n = next_n[title]
            while f"{title}#{n}" in titles:
                n += 1
            pid, next_n[title] = f"{title}#{n}", n + 1
        passages.append(Passage(id=pid, title=title, text=text))
    return Corpus(passages)


def _squash(text: str) -> str:
    return "".join(text.split())


def _resolve_gold(
    raw: Sequence[_RawQuestion], corpus: Corpus, allow_no_gold: bool
) -> list[QAExample]:
    by_text = {(p.title, p.text): p.id for p in corpus}
    by_squashed = {(p.title, _squash(p.text)): p.id for p in corpus}
    by_title: dict[str, list[str]] = {}
    for p in corpus:
        by_title.setdefault(p.title, []).append(p.id)
    by_folded = Counter(title.casefold() for title in by_title)

    def find(qid: str, title: str, text: str | None) -> str:
        if text is not None:
            found = by_text.get((title, text)) or by_squashed.get((title, _squash(text)))
            if found:
                return found
        ids = by_title.get(title, [])
        if len(ids) == 1:
            return ids[0]
        if ids:
            raise ValueError(
                f"question {qid}: gold title {title!r} is ambiguous ({len(ids)} passages share "
                f"it: {ids[:5]}) and the question file gives no text to tell them apart"
            )
        hint = ""
        if by_folded[title.casefold()]:
            near = [t for t in by_title if t.casefold() == title.casefold()]
            hint = f" (titles match case-sensitively; did you mean {near[:3]}?)"
        raise ValueError(f"question {qid}: gold passage {title!r} is not in the corpus{hint}")

    questions = []
    for q in raw:
        if not q.gold:
            _no_gold(q.id, allow_no_gold)
            continue
        gold_ids = tuple(_unique(find(q.id, title, text) for title, text in q.gold))
        questions.append(
            QAExample(
                id=q.id,
                question=q.question,
                answers=q.answers,
                gold_ids=gold_ids,
                hop_ordered=q.hop_ordered,
                type=q.type,
                metadata=q.metadata,
            )
        )
    return questions


def _no_gold(qid: str, allow_no_gold: bool) -> None:
    """Raise for a question without gold, or warn that it is skipped when ``allow_no_gold``."""
    if not allow_no_gold:
        raise ValueError(
            f"question {qid} has no gold passages; fix the file or pass allow_no_gold=True "
            "to skip such questions"
        )
    logger.warning("skipping question %s: it has no gold passages", qid)
