"""Where association pairs come from, and what they cover.

A :class:`PairSet` holds unordered, deduplicated pairs of passage ids (training uses each in
both directions). Sources:

- groups of passages used together: a question's gold passages (:meth:`PairSet.from_gold`),
  co-access sessions, chats or clicks (:meth:`PairSet.from_groups`): every pair in a group;
- label-free, from the corpus itself (:func:`corpus_pairs`): a passage that names another
  passage's title (``title-mention``), or two passages whose titles are named together in a
  third (``co-mention``); relations are registered in :data:`CORPUS_RELATIONS`;
- pairs given by the user (:meth:`PairSet.from_pairs`, :func:`load_pairs`).

:meth:`PairSet.validate` rejects ids outside the corpus (listing the first few);
:attr:`PairSet.pair_source` says whether a set is label-free (every pair read from the corpus)
or labelled, which a trained model records; :func:`leakage` measures how much of an
evaluation's gold the pairs already contain.

Example:
    >>> gold = PairSet.from_groups([("a", "b", "c"), ("b", "a")], source="gold")
    >>> user = PairSet.from_pairs([("c", "d"), ("d", "d")])
    >>> both = gold | user
    >>> both.pairs, both.sources, both.dropped_duplicates, both.dropped_self
    ((('a', 'b'), ('a', 'c'), ('b', 'c'), ('c', 'd')), {'gold': 3, 'user': 1}, 1, 1)
    >>> both.pair_source, PairSet.from_pairs([("a", "b")], source="title-mention").pair_source
    ('labelled', 'corpus')
    >>> leakage(both, [("a", "b"), ("a", "e")]).gold_pairs_seen
    0.5
"""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_multihop.association.settings import LABEL_FREE, LABELLED
from rag_multihop.corpus import Corpus
from rag_multihop.io import json_lines, read_json
from rag_multihop.multihop.subjects import passage_names
from rag_multihop.text import MentionIndex, strip_disambiguation, word_tokens

logger = logging.getLogger(__name__)

Pair = tuple[str, str]


def _canonical(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class PairStats:
    """Counts describing a :class:`PairSet` (``directed_pairs`` = what training sees)."""

    pairs: int
    directed_pairs: int
    passages: int
    sources: dict[str, int]
    dropped_self: int
    dropped_duplicates: int
    max_degree: int
    mean_degree: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairSet:
    """Unordered association pairs, each stored once as ``(a, b)`` with ``a < b``.

    ``pair_sources`` names, per pair, the source that first contributed it;
    ``dropped_self`` and ``dropped_duplicates`` count what building and merging threw away.
    Build with the ``from_*`` constructors or :func:`load_pairs`, merge with ``|``.
    """

    pairs: tuple[Pair, ...] = ()
    pair_sources: tuple[str, ...] = ()
    dropped_self: int = 0
    dropped_duplicates: int = 0

    def __post_init__(self) -> None:
        if len(self.pairs) != len(self.pair_sources):
            raise ValueError(
                f"got {len(self.pairs)} pairs but {len(self.pair_sources)} pair sources"
            )

    @classmethod
    def from_pairs(cls, pairs: Iterable[Sequence[str]], *, source: str = "user") -> PairSet:
        """Pairs ``(a, b)`` of passage ids; order, repeats and self-pairs don't matter."""
        seen: dict[Pair, None] = {}
        total = dropped_self = 0
        for i, pair in enumerate(pairs):
            if isinstance(pair, str) or len(pair) != 2:
                raise ValueError(f"{source} pair {i} must be two passage ids, got {pair!r}")
            a, b = (_check_id(x, f"{source} pair {i}") for x in pair)
            total += 1
            if a == b:
                dropped_self += 1
            else:
                seen.setdefault(_canonical(a, b))
        duplicates = total - dropped_self - len(seen)
        return cls(tuple(seen), (source,) * len(seen), dropped_self, duplicates)

    @classmethod
    def from_groups(cls, groups: Iterable[Sequence[str]], *, source: str) -> PairSet:
        """Every pair within each group (a session, a chat, a question's gold passages).

        A group of ``n`` distinct passages gives ``n·(n−1)/2`` pairs.
        """

        def expand() -> Iterable[Pair]:
            for i, group in enumerate(groups):
                if isinstance(group, str):
                    raise ValueError(f"{source} group {i} must be a list of passage ids, got a str")
                ids = [_check_id(x, f"{source} group {i}") for x in group]
                yield from combinations(dict.fromkeys(ids), 2)

        return cls.from_pairs(expand(), source=source)

    @classmethod
    def from_gold(cls, questions: Iterable[Any], *, source: str = "gold") -> PairSet:
        """All pairs of each question's ``gold_ids`` (any object with that attribute)."""
        return cls.from_groups((q.gold_ids for q in questions), source=source)

    def __len__(self) -> int:
        return len(self.pairs)

    def __or__(self, other: PairSet) -> PairSet:
        """The union; a pair already in ``self`` keeps its source and counts as a duplicate."""
        merged = dict(zip(self.pairs, self.pair_sources, strict=True))
        for pair, source in zip(other.pairs, other.pair_sources, strict=True):
            merged.setdefault(pair, source)
        return PairSet(
            tuple(merged),
            tuple(merged.values()),
            self.dropped_self + other.dropped_self,
            self.dropped_duplicates
            + other.dropped_duplicates
            + len(self)
            + len(other)
            - len(merged),
        )

    @property
    def sources(self) -> dict[str, int]:
        """Source name -> number of pairs it contributed."""
        return dict(Counter(self.pair_sources))

    @property
    def pair_source(self) -> str:
        """``"corpus"`` when every pair comes from a label-free corpus relation
        (:data:`CORPUS_RELATIONS`), else ``"labelled"``
        (:data:`~rag_multihop.association.settings.PAIR_SOURCES`)."""
        label_free = bool(self.pairs) and all(s in CORPUS_RELATIONS for s in self.pair_sources)
        return LABEL_FREE if label_free else LABELLED

    def passage_ids(self) -> set[str]:
        return {pid for pair in self.pairs for pid in pair}

    def validate(self, known_ids: Container[str]) -> None:
        """Raise ``ValueError`` naming the first few ids that are not in ``known_ids``."""
        unknown = sorted(pid for pid in self.passage_ids() if pid not in known_ids)
        if unknown:
            raise ValueError(
                f"association pairs name {len(unknown)} passage id(s) that are not in the "
                f"corpus, e.g. {unknown[:5]}; pairs must use the corpus passage ids"
            )

    def rows(self, position: Mapping[str, int]) -> np.ndarray:
        """The pairs as an ``(m, 2)`` array of rows (``position`` maps id -> row)."""
        self.validate(position)
        return np.array([(position[a], position[b]) for a, b in self.pairs], dtype=np.int64)

    def shuffled(self, seed: int = 0) -> PairSet:
        """The control of the paper's ablation: first ids kept, second ids randomly permuted.

        Every passage keeps its number of pairs but the pairings become arbitrary.
        """
        rng = np.random.default_rng(seed)
        firsts = [a for a, _ in self.pairs]
        seconds = [self.pairs[i][1] for i in rng.permutation(len(self.pairs))]
        return PairSet.from_pairs(zip(firsts, seconds, strict=True), source="shuffled")

    def stats(self) -> PairStats:
        degree = Counter(pid for pair in self.pairs for pid in pair)
        return PairStats(
            pairs=len(self.pairs),
            directed_pairs=2 * len(self.pairs),
            passages=len(degree),
            sources=self.sources,
            dropped_self=self.dropped_self,
            dropped_duplicates=self.dropped_duplicates,
            max_degree=max(degree.values(), default=0),
            mean_degree=round(2 * len(self.pairs) / len(degree), 3) if degree else 0.0,
        )


def _check_id(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: passage ids must be non-empty strings, got {value!r}")
    return value


def load_pairs(path: str | Path, *, source: str | None = None) -> PairSet:
    """Pairs or sessions from a JSON Lines file of id lists (one a line) or a JSON list of them.

    Each record is a list of at least two passage ids used together: a pair, or a whole
    session (every pair in it is taken). A file holding a single list of ids (one line) is
    one record. ``source`` defaults to the file name. A malformed record raises
    ``ValueError`` naming the file and its line (JSON Lines) or its index (a JSON list).
    """
    path = Path(path)
    groups = []
    for where, record in _pair_records(path):
        if not isinstance(record, list) or len(record) < 2:
            raise ValueError(
                f"{path}: {where} must be a list of at least two passage ids, got {record!r}"
            )
        for value in record:
            _check_id(value, f"{path}: {where}")
        groups.append(record)
    return PairSet.from_groups(groups, source=source or path.name)


def _pair_records(path: Path) -> list[tuple[str, Any]]:
    """The records of a pairs file, each with where it is: ``line N`` (JSON Lines, or a
    file holding one id list) or ``record N`` (0-based, of a JSON list of id lists)."""
    data = read_json(path, what="pairs file")  # one JSON value, or each line's value
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip, as read_json detects it
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8-sig")
    lines = json_lines(text)
    if len(lines) > 1 and _is_json(lines[0][1]):  # the first line is a whole value: JSON Lines
        return [(f"line {n}", record) for (n, _), record in zip(lines, data, strict=True)]
    if data == []:
        raise ValueError(f"{path} holds no records (empty list)")
    if isinstance(data, list) and any(isinstance(record, list) for record in data):
        return [(f"record {i}", record) for i, record in enumerate(data)]
    where = f"line {lines[0][0]}" if len(lines) == 1 else f"lines {lines[0][0]}-{lines[-1][0]}"
    return [(where, data)]  # one id list (or one malformed record)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


# --- label-free pairs from the corpus -----------------------------------------------------------

MAX_NAME_TOKENS = 12


def corpus_names(corpus: Corpus, *, min_chars: int, max_passages: int) -> MentionIndex[str]:
    """Passage names (titles, titles without their disambiguation and, for a passage whose
    text holds no word of its title, the subjects read from its text:
    :func:`~rag_multihop.multihop.subjects.passage_names`) as case-sensitive word tokens,
    mapped to passage ids; names shorter than ``min_chars``, longer than
    :data:`MAX_NAME_TOKENS` tokens or shared by more than ``max_passages`` passages are
    left out."""
    by_name: dict[tuple[str, ...], list[str]] = {}
    for passage in corpus:
        for name in {*passage_names(passage), strip_disambiguation(passage.title)}:
            tokens = tuple(word_tokens(name))
            if len(name) >= min_chars and 0 < len(tokens) <= MAX_NAME_TOKENS:
                by_name.setdefault(tokens, []).append(passage.id)
    return MentionIndex(
        (tokens, pid)
        for tokens, ids in by_name.items()
        if len(set(ids)) <= max_passages
        for pid in ids
    )


def _title_mention(mentions: Mapping[str, list[str]]) -> Iterable[Pair]:
    for pid, named in mentions.items():
        for other in named:
            yield pid, other


def _co_mention(mentions: Mapping[str, list[str]]) -> Iterable[Pair]:
    for named in mentions.values():
        yield from combinations(named, 2)


CorpusRelation = Callable[[Mapping[str, list[str]]], Iterable[Pair]]
"""Passage id -> ids of the passages it names, to pairs."""

CORPUS_RELATIONS: Mapping[str, tuple[str, CorpusRelation]] = MappingProxyType(
    {
        "title-mention": ("passage A names the title of passage B", _title_mention),
        "co-mention": ("the titles of A and B are both named in a third passage", _co_mention),
    }
)
"""Label-free relation name -> (description, pair generator); messages are built from it."""

DEFAULT_CORPUS_RELATIONS = ("title-mention",)


def check_relations(relations: Sequence[str]) -> tuple[str, ...]:
    """``relations`` as a tuple when it names at least one relation and only registered ones
    (:data:`CORPUS_RELATIONS`), else ``ValueError`` listing them."""
    names = (relations,) if isinstance(relations, str) else tuple(relations)
    if not names or any(r not in CORPUS_RELATIONS for r in names):
        raise ValueError(
            f"relations must be a non-empty list of {sorted(CORPUS_RELATIONS)}, got {relations!r}"
        )
    return names


def corpus_pairs(
    corpus: Corpus,
    relations: Sequence[str] = DEFAULT_CORPUS_RELATIONS,
    *,
    min_name_chars: int = 4,
    max_passages_per_name: int = 3,
    max_mentions: int = 10,
    max_name_share: float = 0.01,
) -> PairSet:
    """Label-free pairs from titles named in passage texts (no questions, no labels).

    A passage's names are its title and its title without a trailing parenthetical
    (``"Cape Fear (1962 film)"`` -> ``"Cape Fear"``) and, where the title is opaque (a file
    name, a document id), the subjects read from its text (``"Ed Wood is a 1994 film"`` ->
    ``"Ed Wood"``), matched case-sensitively on whole
    tokens in other passages' texts. Names shorter than ``min_name_chars``, shared by more
    than ``max_passages_per_name`` passages, or named by more than ``max_name_share`` of the
    corpus (hubs such as a country) are skipped; a passage naming more than ``max_mentions``
    titles (a list rather than a reasoning link) contributes no pairs.
    """
    relations = check_relations(relations)
    index = corpus_names(corpus, min_chars=min_name_chars, max_passages=max_passages_per_name)
    raw = {p.id: [n for n in index.find(word_tokens(p.text)) if n != p.id] for p in corpus}
    named_by = Counter(n for named in raw.values() for n in named)
    limit = max(1.0, max_name_share * len(corpus))
    mentions = {}
    for pid, named in raw.items():
        kept = [n for n in named if named_by[n] <= limit]
        if len(kept) <= max_mentions:
            mentions[pid] = kept
    result = PairSet()
    for relation in relations:
        _, generate = CORPUS_RELATIONS[relation]
        result = result | PairSet.from_pairs(generate(mentions), source=relation)
    logger.info("label-free pairs from %s: %s", ", ".join(relations), dict(result.sources))
    return result


# --- leakage ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leakage:
    """How much of an evaluation's gold the training pairs contain (shares in [0, 1])."""

    eval_gold_pairs: int
    gold_pairs_seen: float
    eval_gold_passages: int
    gold_passages_seen: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def leakage(pairs: PairSet, gold_groups: Iterable[Sequence[str]]) -> Leakage:
    """Shares of the evaluation's gold pairs and gold passages that appear in ``pairs``.

    ``gold_groups`` holds each evaluated question's gold ids. A transductive benchmark
    trained on the same questions sees 100% of both; a held-out one should see little.
    """
    gold = PairSet.from_groups(gold_groups, source="eval")
    trained = set(pairs.pairs)
    trained_ids = pairs.passage_ids()
    gold_ids = gold.passage_ids()
    return Leakage(
        eval_gold_pairs=len(gold),
        gold_pairs_seen=round(sum(p in trained for p in gold.pairs) / len(gold), 4)
        if gold
        else 0.0,
        eval_gold_passages=len(gold_ids),
        gold_passages_seen=(
            round(len(gold_ids & trained_ids) / len(gold_ids), 4) if gold_ids else 0.0
        ),
    )
