"""The built-in dataset formats, registered in detection order.

- ``native``: this project's single JSON object ``{"name", "passages", "questions"}``.
- ``musique``: official MuSiQue (JSON Lines) or HippoRAG's copies (JSON list), ``paragraphs``
  with ``is_supporting`` and ``question_decomposition`` for the hop order; MuSiQue-Full's
  unanswerable records (``answerable: false``) are left out.
- ``2wikimultihopqa`` / ``hotpotqa``: the official files, ``context: [[title, [sentence,
  ...]]]`` with ``supporting_facts: [[title, sentence_index]]`` (2Wiki adds ``evidences``).
- ``titles``: questions whose ``supporting_facts`` are titles (HippoRAG/GFM-RAG 2Wiki copies);
  needs a separate ``[{"title", "text"}]`` corpus file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rag_multihop.corpus import Corpus
from rag_multihop.eval.datasets.base import (
    CorpusEntries,
    DatasetFormat,
    QAExample,
    RawQuestion,
    check_list,
    common_fields,
    no_gold,
    preview,
    question_id,
    record_format,
    record_type,
    register_format,
    supporting_titles,
    unique,
)
from rag_multihop.types import Passage

logger = logging.getLogger(__name__)

_2WIKI_TYPES = frozenset({"inference", "compositional", "bridge_comparison"})

_ID_NOTE = " (titles make the passage ids)"

Context = list[tuple[str, list[str]]]
"""A HotpotQA / 2Wiki record's paragraphs as ``(title, sentences)``."""


def _sentence_separator(contexts: Sequence[Context]) -> str:
    """``""`` when sentences carry their own leading space (HotpotQA), else ``" "`` (2Wiki)."""
    leading = total = 0
    for context in contexts:
        for _, sentences in context:
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


def join_paragraphs(paragraphs: Sequence[Sequence[str]]) -> list[str]:
    """Each paragraph's sentences joined into its text, with one separator for them all
    (decided as for a question file's context)."""
    separator = _sentence_separator([[("", list(sentences)) for sentences in paragraphs]])
    return [_join_sentences(sentences, separator) for sentences in paragraphs]


def _context(qid: str, record: Mapping[str, Any]) -> Context:
    """A HotpotQA / 2Wiki record's ``context`` as ``(title, sentences)`` pairs, checked."""
    entries = check_list(qid, record, "context")
    context = []
    for i, entry in enumerate(entries):
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not isinstance(entry[1], list)
            or not all(isinstance(sentence, str) for sentence in entry[1])
        ):
            raise ValueError(
                f"question {qid}: field 'context[{i}]' must be [title, [sentence, ...]], "
                f"got {preview(entry)}"
            )
        if not entry[0]:
            raise ValueError(f"question {qid}: field 'context[{i}]' has an empty title{_ID_NOTE}")
        context.append((entry[0], entry[1]))
    return context


def _context_question(
    index: int, record: Mapping[str, Any], context: Context, separator: str
) -> RawQuestion:
    """HotpotQA / 2WikiMultiHopQA: gold = distinct supporting titles, with their text from the
    own context; a title the context lacks (fullwiki files) has no text, to be found by title in
    a corpus file."""
    common = common_fields(index, record)
    joined = tuple((title, _join_sentences(sents, separator)) for title, sents in context)
    own: dict[str, str] = {}
    for title, text in joined:
        own.setdefault(title, text)
    gold: list[tuple[str, str | None]] = []
    for title in supporting_titles(common["id"], record):
        if (title, own.get(title)) not in gold:
            gold.append((title, own.get(title)))
    return RawQuestion(
        **common,
        gold=tuple(gold),
        hop_ordered=False,
        type=record_type(record),
        context=joined,
    )


def _paragraphs(qid: str, record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A MuSiQue record's ``paragraphs``: objects with string ``title`` and ``paragraph_text``."""
    paragraphs = check_list(qid, record, "paragraphs")
    for i, paragraph in enumerate(paragraphs):
        if not isinstance(paragraph, dict):
            raise ValueError(
                f"question {qid}: field 'paragraphs[{i}]' must be an object, "
                f"got {preview(paragraph)}"
            )
        for key in ("title", "paragraph_text"):
            if not isinstance(paragraph.get(key), str):
                problem = "is missing" if key not in paragraph else "must be a string"
                raise ValueError(
                    f"question {qid}: field 'paragraphs[{i}].{key}' {problem} "
                    f"(the paragraph has keys {sorted(paragraph)})"
                )
        if not paragraph["title"]:
            raise ValueError(f"question {qid}: field 'paragraphs[{i}].title' is empty{_ID_NOTE}")
    return paragraphs


def _musique_question(index: int, record: Mapping[str, Any]) -> RawQuestion:
    """MuSiQue: gold = supporting paragraphs, ordered by ``question_decomposition`` when it
    points at exactly the supporting paragraphs."""
    common = common_fields(index, record)
    qid = common["id"]
    paragraphs = _paragraphs(qid, record)
    by_idx = {p.get("idx", i): p for i, p in enumerate(paragraphs)}
    supporting = [p.get("idx", i) for i, p in enumerate(paragraphs) if p.get("is_supporting")]
    decomposition = check_list(qid, record, "question_decomposition")
    bad = next((i for i, step in enumerate(decomposition) if not isinstance(step, dict)), None)
    if bad is not None:
        raise ValueError(
            f"question {qid}: field 'question_decomposition[{bad}]' must be an object, "
            f"got {preview(decomposition[bad])}"
        )
    steps = unique(step.get("paragraph_support_idx") for step in decomposition)
    hop_ordered = bool(steps) and sorted(steps, key=str) == sorted(supporting, key=str)
    if supporting and not hop_ordered:
        logger.debug("question %s: decomposition does not match supporting paragraphs", qid)
    order = steps if hop_ordered else supporting
    gold = tuple((by_idx[i]["title"], by_idx[i]["paragraph_text"].strip()) for i in order)
    return RawQuestion(
        **common,
        gold=gold,
        hop_ordered=hop_ordered,
        type=qid.split("__", 1)[0] if "__" in qid else None,
        context=tuple((p["title"], p["paragraph_text"].strip()) for p in paragraphs),
    )


def _musique_questions(records: Sequence[Mapping[str, Any]]) -> list[RawQuestion]:
    """The answerable records' questions: MuSiQue-Full's unanswerable contrast records
    (``answerable: false``, sharing their twin's id) have no gold to retrieve, so they and
    their paragraphs are left out, with a logged count."""
    questions = [
        _musique_question(i, r) for i, r in enumerate(records) if r.get("answerable") is not False
    ]
    if len(questions) < len(records):
        logger.warning(
            "skipped %d unanswerable MuSiQue question(s) (answerable: false)",
            len(records) - len(questions),
        )
    return questions


def _titles_question(index: int, record: Mapping[str, Any]) -> RawQuestion:
    """Supporting facts given as titles (or ``[title, sentence_index]`` pairs), no text."""
    common = common_fields(index, record)
    titles = unique(supporting_titles(common["id"], record))
    return RawQuestion(
        **common,
        gold=tuple((title, None) for title in titles),
        hop_ordered=False,
        type=record_type(record),
        context=(),
    )


def _parse_native(
    data: Mapping[str, Any], limit: int | None, allow_no_gold: bool
) -> tuple[Corpus, list[QAExample]]:
    for key in ("passages", "questions"):
        if not isinstance(data[key], list):
            raise ValueError(f"field {key!r} must be a list, got {preview(data[key])}")
    passages = []
    for i, p in enumerate(data["passages"]):
        if not isinstance(p, dict) or "id" not in p or "text" not in p:
            raise ValueError(
                f"field 'passages[{i}]' must be an object with 'id' and 'text', got {preview(p)}"
            )
        pid, title, text = p["id"], p.get("title") or "", p["text"]
        if isinstance(pid, bool) or not isinstance(pid, str | int):
            raise ValueError(f"field 'passages[{i}].id' must be a string, got {preview(pid)}")
        for field, value in (("title", title), ("text", text)):
            if not isinstance(value, str):
                raise ValueError(
                    f"field 'passages[{i}].{field}' must be a string, got {preview(value)}"
                )
        passages.append(Passage(id=str(pid), title=title, text=text))
    corpus = Corpus(passages)
    questions = []
    for i, record in enumerate(data["questions"][:limit]):
        if not isinstance(record, dict):
            raise ValueError(f"field 'questions[{i}]' must be an object, got {preview(record)}")
        common = common_fields(i, record)
        gold_ids = tuple(str(g) for g in check_list(common["id"], record, "gold_ids"))
        missing = [g for g in gold_ids if g not in corpus]
        if missing:
            raise ValueError(f"question {common['id']}: gold ids {missing} are not passage ids")
        if not gold_ids:
            no_gold(common["id"], allow_no_gold)
            continue
        common["metadata"].pop("gold_ids", None)
        common["metadata"].pop("hop_ordered", None)
        questions.append(
            QAExample(
                **common,
                gold_ids=gold_ids,
                hop_ordered=bool(record.get("hop_ordered", False)),
                type=record_type(record),
            )
        )
    return corpus, questions


def _read_native(
    data: Any,
    *,
    source: str,
    corpus_entries: CorpusEntries | None,
    limit: int | None,
    allow_no_gold: bool,
) -> tuple[Corpus, list[QAExample]]:
    del source, corpus_entries  # load_dataset refuses a corpus file for own-corpus formats
    return _parse_native(data, limit, allow_no_gold)


def _context_questions(records: Sequence[Mapping[str, Any]]) -> list[RawQuestion]:
    contexts = [_context(question_id(i, r), r) for i, r in enumerate(records)]
    separator = _sentence_separator(contexts)
    return [
        _context_question(i, r, context, separator)
        for i, (r, context) in enumerate(zip(records, contexts, strict=True))
    ]


def _has_context(first: Mapping[str, Any]) -> bool:
    return "context" in first and "supporting_facts" in first


def _is_2wiki(first: Mapping[str, Any]) -> bool:
    return _has_context(first) and ("evidences" in first or first.get("type") in _2WIKI_TYPES)


register_format(
    DatasetFormat(
        "native",
        'one JSON object {"name", "passages": [{"id", "title", "text"}], "questions": '
        '[{"id", "question", "answer", "gold_ids", ...}]} (no corpus file)',
        lambda data: isinstance(data, dict) and "passages" in data and "questions" in data,
        _read_native,
        own_corpus=True,
    )
)
register_format(
    record_format(
        "musique",
        "MuSiQue (official JSON Lines or HippoRAG's JSON list): records with paragraphs "
        "[{idx, title, paragraph_text, is_supporting}] and question_decomposition",
        lambda first: "paragraphs" in first,
        _musique_questions,
    )
)
register_format(
    record_format(
        "2wikimultihopqa",
        "official 2WikiMultiHopQA: HotpotQA layout plus evidences",
        _is_2wiki,
        _context_questions,
    )
)
register_format(
    record_format(
        "hotpotqa",
        "official HotpotQA: records with context [[title, [sentences]]] and "
        "supporting_facts [[title, sentence_index]]",
        _has_context,
        _context_questions,
    )
)
register_format(
    record_format(
        "titles",
        "records whose supporting_facts are titles, with a separate "
        '[{"title", "text"}] corpus file (HippoRAG / GFM-RAG 2Wiki copies)',
        lambda first: "supporting_facts" in first,
        lambda records: [_titles_question(i, r) for i, r in enumerate(records)],
        needs_corpus=True,
    )
)
