"""The dataset types, the registry of formats, and what every record format shares.

A :class:`DatasetFormat` is a detector (does this parsed question file look like me?) and
a reader (the file's corpus and questions); :func:`register_format` adds one to
:data:`FORMATS`, tried in registration order. Record formats (a list of question records)
translate each record to a :class:`RawQuestion` whose gold passages are still
``(title, text)``; :func:`from_raw` builds the corpus and resolves the gold into it.
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from rag_multihop.corpus import Corpus
from rag_multihop.text import visible
from rag_multihop.types import Passage

logger = logging.getLogger(__name__)

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
    ``gold_units`` (a corpus view, :mod:`rag_multihop.eval.views`) groups the gold ids: one
    tuple of alternative ids per gold passage, found when any of them is; empty: each gold id
    is its own unit. :attr:`gold` is what the metrics score.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...]
    hop_ordered: bool
    type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    gold_units: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "answers", tuple(self.answers))
        object.__setattr__(self, "gold_ids", tuple(self.gold_ids))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        units = tuple(tuple(unit) for unit in self.gold_units)
        object.__setattr__(self, "gold_units", units)
        stray = {pid for unit in units for pid in unit} - set(self.gold_ids)
        if stray:
            raise ValueError(
                f"question {self.id}: gold_units name ids that are not in gold_ids: "
                f"{sorted(stray)[:5]}"
            )

    @property
    def gold(self) -> tuple[str | tuple[str, ...], ...]:
        """The gold the metrics score: ``gold_units`` when set, else ``gold_ids``."""
        return self.gold_units or self.gold_ids


@dataclass(frozen=True)
class Dataset:
    """A corpus and the questions over it; ``source_format`` is a key of :data:`FORMATS`.

    ``split`` names the half of the questions kept (``"all"``, ``"tune"`` or ``"test"``, see
    :func:`rag_multihop.eval.splits.split_dataset`); ``held_out`` holds the other half's
    questions, never evaluated, for methods that train on it (``dense-ft``). ``view``
    describes the corpus view (:mod:`rag_multihop.eval.views`; ``{"name": "titled"}``: the
    corpus as loaded).
    """

    name: str
    corpus: Corpus
    questions: tuple[QAExample, ...]
    source_format: str
    split: str = "all"
    held_out: tuple[QAExample, ...] = ()
    view: Mapping[str, Any] = field(default_factory=lambda: {"name": "titled"})


CorpusEntries = Sequence[tuple[str, str]]
"""A separate corpus file's passages as ``(title, text)``, deduplicated, in file order."""


class Reader(Protocol):
    """Reads a parsed question file (``source`` names it in errors) into a corpus and its
    questions; ``corpus_entries`` are a separate corpus file's passages, or ``None``."""

    def __call__(
        self,
        data: Any,
        *,
        source: str,
        corpus_entries: CorpusEntries | None,
        limit: int | None,
        allow_no_gold: bool,
    ) -> tuple[Corpus, list[QAExample]]: ...


@dataclass(frozen=True)
class DatasetFormat:
    """One question-file format: what it looks like and how it is read.

    Attributes:
        name: the format's name (``Dataset.source_format``).
        description: what its files look like (error messages list them).
        detect: the parsed question file (a JSON value) -> whether it is this format.
        read: a :class:`Reader`: the file's corpus and questions.
        needs_corpus: the questions carry no passage texts, so a corpus file is required.
        own_corpus: the file carries its passages, so a corpus file is refused.
    """

    name: str
    description: str
    detect: Callable[[Any], bool]
    read: Reader
    needs_corpus: bool = False
    own_corpus: bool = False


_FORMATS: dict[str, DatasetFormat] = {}

FORMATS: Mapping[str, DatasetFormat] = MappingProxyType(_FORMATS)
"""Registered formats by name, in detection order (add one with :func:`register_format`)."""


def register_format(fmt: DatasetFormat) -> DatasetFormat:
    """Add ``fmt`` to :data:`FORMATS` (tried after the formats registered before it)."""
    _FORMATS[fmt.name] = fmt
    return fmt


def detect_format(data: Any, source: str) -> DatasetFormat:
    """The first registered format whose detector accepts ``data`` (the parsed file
    ``source``), else ``ValueError``: what is wrong with the records, or every format's
    description."""
    for fmt in _FORMATS.values():
        if fmt.detect(data):
            return fmt
    first = as_records(data, source)[0]
    supported = "; ".join(f"{name}: {fmt.description}" for name, fmt in _FORMATS.items())
    raise ValueError(
        f"unknown dataset format; the first record has keys {sorted(first)}. "
        f"Supported formats: {supported}"
    )


@dataclass(frozen=True)
class RawQuestion:
    """A question translated from its source record, gold still given as ``(title, text)``
    (text ``None`` when the file names titles only)."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[tuple[str, str | None], ...]
    hop_ordered: bool
    type: str | None
    metadata: Mapping[str, Any]
    context: tuple[tuple[str, str], ...]


def first_record(data: Any) -> Mapping[str, Any] | None:
    """The first question record of a parsed file (an object or a list of them), if any."""
    records = [data] if isinstance(data, dict) else data
    if isinstance(records, list) and records and isinstance(records[0], dict):
        return records[0]
    return None


def as_records(data: Any, name: str) -> list[dict[str, Any]]:
    """``data`` as a non-empty list of record objects, else ``ValueError`` naming ``name``."""
    records = [data] if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(f"{name} must hold a JSON list or JSON Lines of objects")
    if not records:
        raise ValueError(f"{name} holds no records (empty list)")
    bad = next((i for i, r in enumerate(records) if not isinstance(r, dict)), None)
    if bad is not None:
        raise ValueError(f"{name}: record {bad} is a {type(records[bad]).__name__}, not an object")
    return records


def unique(items: Iterable[Any]) -> list[Any]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))


def question_id(index: int, record: Mapping[str, Any]) -> str:
    """The record's ``id`` or ``_id``; its position in the file when it has neither."""
    value = record.get("id", record.get("_id"))
    return str(index) if value is None else str(value)


def preview(value: Any, limit: int = 80) -> str:
    """``value`` as JSON-ish text for an error message, cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_list(qid: str, record: Mapping[str, Any], key: str) -> list[Any]:
    """The list in ``record[key]`` (empty when absent or null), else ``ValueError``."""
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"question {qid}: field {key!r} must be a list, got {preview(value)}")
    return value


def supporting_titles(qid: str, record: Mapping[str, Any]) -> list[str]:
    """The titles of ``supporting_facts`` (``[title, sentence_index]`` pairs or titles)."""
    titles = []
    for i, fact in enumerate(check_list(qid, record, "supporting_facts")):
        title = fact[0] if isinstance(fact, list) and fact else fact
        if not isinstance(title, str):
            raise ValueError(
                f"question {qid}: field 'supporting_facts[{i}]' must be [title, "
                f"sentence_index] or a title, got {preview(fact)}"
            )
        titles.append(title)
    return titles


def _strings(qid: str, field: str, values: list[Any]) -> list[str]:
    """``values`` as strings (a number, as a year or a count often is, in its usual form;
    ``null`` left out), else ``ValueError`` naming ``field[i]``."""
    out = []
    for i, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError(
                f"question {qid}: field '{field}[{i}]' must be a string, got {preview(value)}"
            )
        out.append(value)
    return out


def _answers(qid: str, record: Mapping[str, Any]) -> tuple[str, ...]:
    """The record's ``answer`` then its ``answer_aliases``, deduplicated, empty strings dropped.

    ``answer`` is a string (or a number), a list of acceptable answers (the first is the
    answer, the others aliases), or absent or ``null`` (no answer). Any other value (an
    object, a boolean) raises ``ValueError`` naming the question and the field.
    """
    answer = record.get("answer")
    if answer is None:
        answer = []
    elif not isinstance(answer, list):
        answer = [answer]
        if isinstance(answer[0], bool) or not isinstance(answer[0], str | int | float):
            raise ValueError(
                f"question {qid}: field 'answer' must be a string or a list of strings (leave it "
                f"out when there is none), got {preview(answer[0])}"
            )
    aliases = check_list(qid, record, "answer_aliases")
    answers = [*_strings(qid, "answer", answer), *_strings(qid, "answer_aliases", aliases)]
    return tuple(unique(a for a in answers if a))


def common_fields(index: int, record: Mapping[str, Any]) -> dict[str, Any]:
    """``id``, ``question``, ``answers`` and ``metadata`` of a record, checked."""
    qid = question_id(index, record)
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question {qid}: field 'question' must be a non-empty string")
    answers = _answers(qid, record)
    metadata = {k: v for k, v in record.items() if k not in _MAPPED_FIELDS}
    return {"id": qid, "question": question, "answers": answers, "metadata": metadata}


def record_type(record: Mapping[str, Any]) -> str | None:
    value = record.get("type")
    return None if value is None else str(value)


def no_gold(qid: str, allow_no_gold: bool) -> None:
    """Raise for a question without gold, or warn that it is skipped when ``allow_no_gold``."""
    if not allow_no_gold:
        raise ValueError(
            f"question {qid} has no gold passages; fix the file or pass allow_no_gold=True "
            "to skip such questions"
        )
    logger.warning("skipping question %s: it has no gold passages", qid)


def build_corpus(entries: CorpusEntries) -> Corpus:
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


def _fold(title: str) -> str:
    """What near-identical titles share: case, invisible characters and Unicode form aside."""
    return unicodedata.normalize("NFC", visible(title)).casefold()


def resolve_gold(
    raw: Sequence[RawQuestion], corpus: Corpus, allow_no_gold: bool
) -> list[QAExample]:
    """Questions with their ``(title, text)`` gold matched to passage ids of ``corpus``."""
    by_text = {(p.title, p.text): p.id for p in corpus}
    by_squashed = {(p.title, _squash(p.text)): p.id for p in corpus}
    by_title: dict[str, list[str]] = {}
    by_nfc: dict[str, list[str]] = {}
    for p in corpus:
        by_title.setdefault(p.title, []).append(p.id)
        by_nfc.setdefault(unicodedata.normalize("NFC", p.title), []).append(p.id)
    by_folded = Counter(_fold(title) for title in by_title)

    def find(qid: str, title: str, text: str | None) -> str:
        if text is not None:
            found = by_text.get((title, text)) or by_squashed.get((title, _squash(text)))
            if found:
                return found
        ids = by_title.get(title) or by_nfc.get(unicodedata.normalize("NFC", title), [])
        if len(ids) == 1:
            return ids[0]
        if ids:
            raise ValueError(
                f"question {qid}: gold title {title!r} is ambiguous ({len(ids)} passages share "
                f"it: {ids[:5]}) and the question file gives no text to tell them apart"
            )
        hint = ""
        if by_folded[_fold(title)]:
            near = [t for t in by_title if _fold(t) == _fold(title)]
            hint = (
                " (titles match exactly, case and invisible characters too; did you mean "
                f"{near[:3]}?)"
            )
        raise ValueError(f"question {qid}: gold passage {title!r} is not in the corpus{hint}")

    questions = []
    for q in raw:
        if not q.gold:
            no_gold(q.id, allow_no_gold)
            continue
        gold_ids = tuple(unique(find(q.id, title, text) for title, text in q.gold))
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


def _check_closed(raw: Sequence[RawQuestion]) -> None:
    """Without a corpus file every gold passage must be one of the question's own paragraphs
    (a gold title without text is one its own paragraphs lack)."""
    for q in raw:
        missing = next((title for title, text in q.gold if text is None), None)
        if missing is not None:
            raise ValueError(
                f"question {q.id}: supporting title {missing!r} is not in its own context "
                "(pass a corpus file that holds it to match it there by title)"
            )


def record_format(
    name: str,
    description: str,
    detect: Callable[[Mapping[str, Any]], bool],
    parse: Callable[[Sequence[Mapping[str, Any]]], list[RawQuestion]],
    *,
    needs_corpus: bool = False,
) -> DatasetFormat:
    """A format of question records: ``detect`` reads the first record, ``parse`` translates
    the (limited) records; the corpus is the corpus file's, else the union of the records'
    own paragraphs (deduplicated by ``(title, text)``)."""

    def detect_data(data: Any) -> bool:
        first = first_record(data)
        return first is not None and detect(first)

    def read(
        data: Any,
        *,
        source: str,
        corpus_entries: CorpusEntries | None,
        limit: int | None,
        allow_no_gold: bool,
    ) -> tuple[Corpus, list[QAExample]]:
        raw = parse(as_records(data, source)[:limit])
        if corpus_entries is None:
            _check_closed(raw)
            corpus_entries = unique(pair for q in raw for pair in q.context)
        corpus = build_corpus(corpus_entries)
        return corpus, resolve_gold(raw, corpus, allow_no_gold)

    return DatasetFormat(name, description, detect_data, read, needs_corpus=needs_corpus)
