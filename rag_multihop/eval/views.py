"""Corpus views: the same questions over the same text, as a user's corpus would hold it.

``rag-multihop bench --view titled|untitled|chunked`` (:func:`apply_view`) works on a loaded
:class:`~rag_multihop.eval.datasets.Dataset` of any format, before the tune/test split:

- ``titled``: the dataset as loaded (encyclopedic titles that name each passage's subject).
- ``untitled``: every title replaced by an opaque document id (``doc-`` and 10 hex digits of a
  seeded hash of the title, so passages sharing a title share the id); passage ids become that
  id (``doc-…#2``, ``#3`` for later passages of one document) and the gold is renamed with
  them. The text is unchanged; what is embedded follows the library's convention,
  ``title + "\\n" + text``, i.e. the opaque id and the text, as for any user whose passages
  carry a file name as title.
- ``chunked``: the passages are grouped into documents by a seeded rule (the distinct titles
  in a seeded random order, cut into consecutive groups of ``doc_min``..``doc_max`` titles, a
  title's passages kept together in corpus order); each document's text is its passages'
  texts joined (their titles dropped), split into windows of ``chunk_words`` words that
  overlap by ``chunk_overlap`` words (the last window ends at the document's end). Each chunk
  is titled by its document's opaque name (``doc-…``, as above) and gets the id
  ``doc-…#n`` (n = 1, 2, ...). Gold: for each gold passage, the chunks that hold one of its
  supporting sentences; a chunk holds a sentence when at least half of the sentence's words
  are in it, or the sentence fills at least half of the chunk (a sentence longer than a
  window, such as a flattened table). Every sentence of a gold passage counts as supporting
  (2Wiki's shared question file names titles only). The question's
  :attr:`QAExample.gold_units` keep one unit per gold passage, so a passage split over two
  chunks is found when either chunk is.

Every view is deterministic for its seed (:data:`VIEW_SEED` by default) and is reported in
``results.json`` (``dataset.view``).

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> from rag_multihop.eval.datasets import Dataset, QAExample
    >>> corpus = Corpus([Passage("Ada", "Ada wrote notes. She met Babbage.", "Ada"),
    ...                  Passage("Babbage", "Babbage built engines.", "Babbage")])
    >>> data = Dataset("toy", corpus, (QAExample("q", "?", (), ("Ada", "Babbage"), False),), "x")
    >>> untitled = apply_view(data, ViewSettings("untitled"))
    >>> [p.title == p.id and p.id.startswith("doc-") for p in untitled.corpus]
    [True, True]
    >>> chunked = apply_view(data, ViewSettings("chunked", chunk_words=4, chunk_overlap=1))
    >>> [p.text for p in chunked.corpus]
    ['Babbage built engines. Ada', 'Ada wrote notes. She', 'She met Babbage.']
    >>> len(chunked.questions[0].gold_units)
    2
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from rag_multihop.corpus import Corpus
from rag_multihop.eval.datasets import Dataset, QAExample
from rag_multihop.types import Passage
from rag_multihop.validation import check_choice, check_int, check_positive_int

VIEWS = ("titled", "untitled", "chunked")
VIEW_SEED = 20261125

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


@dataclass(frozen=True)
class ViewSettings:
    """Which view and its knobs (the chunk knobs are read by ``chunked`` only).

    Attributes:
        name: ``titled``, ``untitled`` or ``chunked``.
        seed: seeds the opaque ids and the grouping of passages into documents.
        chunk_words: words per chunk (about the length of two 2Wiki passages).
        chunk_overlap: words shared by consecutive chunks of one document.
        doc_min, doc_max: titles per document (drawn uniformly per document).
    """

    name: str = "titled"
    seed: int = VIEW_SEED
    chunk_words: int = 100
    chunk_overlap: int = 20
    doc_min: int = 2
    doc_max: int = 5

    def __post_init__(self) -> None:
        check_choice(self.name, "view", VIEWS)
        check_int(self.seed, "seed", low=0)
        check_positive_int(self.chunk_words, "chunk_words")
        check_int(self.chunk_overlap, "chunk_overlap", low=0, high=self.chunk_words - 1)
        check_positive_int(self.doc_min, "doc_min")
        check_int(self.doc_max, "doc_max", low=self.doc_min)

    def describe(self) -> dict[str, Any]:
        """The knobs that shape this view (for ``results.json``)."""
        if self.name == "titled":
            return {"name": "titled"}
        if self.name == "untitled":
            return {"name": "untitled", "seed": self.seed}
        return asdict(self)


def apply_view(dataset: Dataset, view: ViewSettings) -> Dataset:
    """``dataset`` (its questions and held-out questions) seen through ``view``."""
    if view.name == "titled":
        return replace(dataset, view=view.describe())
    if view.name == "untitled":
        corpus, renamed = _untitled(dataset.corpus, view.seed)

        def convert(q: QAExample) -> QAExample:
            return replace(q, gold_ids=tuple(renamed[g] for g in q.gold_ids), gold_units=())

    else:
        corpus, holders = _chunked(dataset.corpus, view)

        def convert(q: QAExample) -> QAExample:
            empty = [g for g in q.gold_ids if not holders.get(g)]
            if empty:
                raise ValueError(
                    f"{dataset.name}: question {q.id}: gold passages {empty[:3]} hold no words, "
                    "so the chunked view has no chunk for them (give them text, or use the "
                    "titled or untitled view)"
                )
            units = tuple(holders[g] for g in q.gold_ids)
            ids = tuple(dict.fromkeys(pid for unit in units for pid in unit))
            return replace(q, gold_ids=ids, gold_units=units)

    return replace(
        dataset,
        corpus=corpus,
        questions=tuple(convert(q) for q in dataset.questions),
        held_out=tuple(convert(q) for q in dataset.held_out),
        view=view.describe(),
    )


def opaque_name(title: str, seed: int) -> str:
    """The opaque document id of ``title`` (stable for a seed).

    >>> opaque_name("Ada Lovelace", 1) == opaque_name("Ada Lovelace", 1)
    True
    """
    digest = hashlib.sha256(f"{seed}\x00{title}".encode()).hexdigest()
    return f"doc-{digest[:10]}"


def _names(titles: Sequence[str], seed: int) -> dict[str, str]:
    """Title -> opaque name for every distinct title (``ValueError`` on a hash collision)."""
    names = {title: opaque_name(title, seed) for title in dict.fromkeys(titles)}
    if len(set(names.values())) < len(names):
        raise ValueError(f"two titles hash to one opaque id for seed {seed}; choose another seed")
    return names


def _document_key(passage: Passage) -> str:
    """What groups passages into one source document: the title, else the id."""
    return passage.title or passage.id


def _untitled(corpus: Corpus, seed: int) -> tuple[Corpus, dict[str, str]]:
    names = _names([_document_key(p) for p in corpus], seed)
    seen: dict[str, int] = {}
    renamed: dict[str, str] = {}
    passages = []
    for p in corpus:
        doc = names[_document_key(p)]
        seen[doc] = seen.get(doc, 0) + 1
        pid = doc if seen[doc] == 1 else f"{doc}#{seen[doc]}"
        renamed[p.id] = pid
        passages.append(Passage(id=pid, text=p.text, title=doc, metadata=p.metadata))
    return Corpus(passages), renamed


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Word spans ``[start, end)`` of the sentences of ``text`` (split after ``.!?``).

    >>> sentence_spans("One two. Three! Four five six")
    [(0, 2), (2, 3), (3, 6)]
    """
    spans = []
    start = 0
    for sentence in _SENTENCE_END.split(text.strip()):
        n = len(sentence.split())
        if n:
            spans.append((start, start + n))
            start += n
    return spans


def _documents(corpus: Corpus, view: ViewSettings) -> list[list[Passage]]:
    """The passages grouped into documents by the seeded rule (see the module docstring)."""
    by_key: dict[str, list[Passage]] = {}
    for p in corpus:
        by_key.setdefault(_document_key(p), []).append(p)
    keys = list(by_key)
    rng = np.random.default_rng(view.seed)
    order = [keys[i] for i in rng.permutation(len(keys))]
    documents = []
    while order:
        size = int(rng.integers(view.doc_min, view.doc_max + 1))
        group, order = order[:size], order[size:]
        documents.append([p for key in group for p in by_key[key]])
    return documents


def _windows(length: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Word windows ``[start, end)`` covering ``length`` words; the last ends at the end.

    >>> _windows(10, 4, 1)
    [(0, 4), (3, 7), (6, 10)]
    """
    stride = size - overlap
    windows = []
    start = 0
    while True:
        end = min(start + size, length)
        windows.append((start, end))
        if end >= length:
            return windows
        start += stride


def _chunked(corpus: Corpus, view: ViewSettings) -> tuple[Corpus, Mapping[str, tuple[str, ...]]]:
    """The chunks and, per source passage id, the ids of the chunks holding its sentences
    (none for a passage without words)."""
    documents = _documents(corpus, view)
    names = _names([_document_key(doc[0]) for doc in documents], view.seed)
    chunks: list[Passage] = []
    holders: dict[str, tuple[str, ...]] = {}
    for doc in documents:
        name = names[_document_key(doc[0])]
        words: list[str] = []
        sentences: list[tuple[str, int, int]] = []  # (passage id, start, end) in doc words
        for p in doc:
            offset = len(words)
            words.extend(p.text.split())
            sentences.extend((p.id, offset + a, offset + b) for a, b in sentence_spans(p.text))
        if not words:
            continue
        windows = _windows(len(words), view.chunk_words, view.chunk_overlap)
        ids = [f"{name}#{n}" for n in range(1, len(windows) + 1)]
        chunks.extend(
            Passage(id=cid, text=" ".join(words[a:b]), title=name, metadata={"document": name})
            for cid, (a, b) in zip(ids, windows, strict=True)
        )
        held: dict[str, dict[str, None]] = {p.id: {} for p in doc}
        for pid, s_start, s_end in sentences:
            for cid, (a, b) in zip(ids, windows, strict=True):
                shared = min(b, s_end) - max(a, s_start)
                if shared > 0 and 2 * shared >= min(s_end - s_start, b - a):
                    held[pid][cid] = None
        holders.update((pid, tuple(cids)) for pid, cids in held.items())
    return Corpus(chunks), holders
