"""Entity extraction behind a protocol, with a label-free heuristic default.

An :class:`EntityExtractor` maps texts to lists of *normalised* entity names (see
:func:`normalize_entity`). The graph builder calls it on passage texts and the graph
retriever on query texts, so the same normalisation applies to both sides. An LLM-based
extractor plugs in by implementing the same two members (``name`` and ``extract``).

:class:`HeuristicExtractor` needs no model and no labels. It finds:

- capitalised spans: runs of capitalised words, joined by the connectors of :data:`CONNECTORS`
  ("University of Oxford", "Charles de Gaulle"); single capitalised words too, unless they are
  common sentence openers (:data:`STOP_CAPITALISED`);
- dates (``"12 March 1990"``, ``"March 12, 1990"`` -> ``"1990-03-12"``; ``"March 1990"`` ->
  ``"1990-03"``; each also yields its year) and years;
- other numbers with at least ``min_number_digits`` digits (``"1,200"`` -> ``"1200"``).

Passage titles are not the extractor's job: the graph builder adds each passage's title as an
entity of that passage.

Example:
    >>> HeuristicExtractor().extract(["The Lord of the Rings was filmed in New Zealand."])
    [['lord of the rings', 'new zealand']]
    >>> HeuristicExtractor().extract(["Born on 4 July 1804 in Salem."])
    [['1804-07-04', '1804', 'salem']]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rag_multihop.text import normalize_entity, normalize_word, visible
from rag_multihop.validation import check_positive_int

__all__ = [
    "CONNECTORS",
    "MONTHS",
    "STOP_CAPITALISED",
    "EntityExtractor",
    "HeuristicExtractor",
    "normalize_entity",
]

logger = logging.getLogger(__name__)

CONNECTORS = frozenset(
    {"of", "the", "de", "la", "le", "von", "van", "der", "den", "da", "del", "di", "du", "des"}
)
"""Lower-case words allowed inside a capitalised span ("Bank of England")."""

STOP_CAPITALISED = frozenset(
    """a an the he she it they we i you his her its their our my this that these those there
    here in on at by for from to of with as after before during when while where which who whom
    whose what why how but and or if although though since because following born also however
    then thus later today one two three mr mrs ms dr st is are was were be been do does did has
    have had can could would will shall should may might must both either neither not no yes
    name list give find tell january february march april june july august september october
    november december""".split()  # noqa: SIM905 - a word list reads better as text
)
"""Capitalised single words that are not entities on their own (sentence openers and such)."""

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}

_MONTH = r"(?P<{}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_MONTH_YEAR = re.compile(
    r"\b(?P<d>\d{1,2})\s+" + _MONTH.format("m") + r",?\s+(?P<y>\d{3,4})\b", re.IGNORECASE
)
_MONTH_DAY_YEAR = re.compile(
    r"\b" + _MONTH.format("m") + r"\s+(?P<d>\d{1,2}),?\s+(?P<y>\d{3,4})\b", re.IGNORECASE
)
_MONTH_YEAR = re.compile(r"\b" + _MONTH.format("m") + r"\s+(?P<y>\d{4})\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d,.])\b(1[0-9]{3}|20[0-9]{2})\b(?![\d,.]\d)")
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[^\W_][\w'’\-.]*[^\W_]|[^\W_]", re.UNICODE)
_SENTENCE_ENDS = frozenset('.!?:;"“”([')


def _ends_sentence(gap: str) -> bool:
    """Whether the characters between two words end a sentence (or open a quote or bracket).

    Only the gap is read (words end in a word character), which keeps extraction linear in
    the passage's length.
    """
    stripped = gap.rstrip()
    return bool(stripped) and stripped[-1] in _SENTENCE_ENDS


def _cover(mask: bytearray, span: tuple[int, int]) -> None:
    mask[span[0] : span[1]] = b"\x01" * (span[1] - span[0])


@runtime_checkable
class EntityExtractor(Protocol):
    """Texts in, normalised entity names out (one list per text, first-occurrence order).

    ``name`` identifies the extractor (it is written into saved graphs).
    """

    @property
    def name(self) -> str: ...

    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        """Normalised entity names of each text, deduplicated, in order of first occurrence."""
        ...


class HeuristicExtractor:
    """The label-free default: capitalised spans, dates, years and numbers (module docstring).

    Args:
        include_single_words: also emit capitalised single words (not in
            :data:`STOP_CAPITALISED`).
        include_numbers: emit dates, years and numbers.
        min_number_digits: the fewest digits a plain number needs to count as an entity.
        max_span_words: longer capitalised runs are dropped (they are usually headings).
    """

    def __init__(
        self,
        *,
        include_single_words: bool = True,
        include_numbers: bool = True,
        min_number_digits: int = 3,
        max_span_words: int = 8,
    ) -> None:
        self.include_single_words = include_single_words
        self.include_numbers = include_numbers
        self.min_number_digits = check_positive_int(min_number_digits, "min_number_digits")
        self.max_span_words = check_positive_int(max_span_words, "max_span_words")

    @property
    def name(self) -> str:
        return (
            f"heuristic(single={self.include_single_words},numbers={self.include_numbers},"
            f"digits={self.min_number_digits},span={self.max_span_words})"
        )

    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        return [self._extract_one(text) for text in texts]

    def _extract_one(self, text: str) -> list[str]:
        text = visible(text)
        found: list[str] = []
        if self.include_numbers:
            found.extend(self._dates_and_numbers(text))
        found.extend(self._capitalised_spans(text))
        return list(dict.fromkeys(name for name in found if name))

    def _dates_and_numbers(self, text: str) -> list[str]:
        found: list[str] = []
        covered = bytearray(len(text))  # 1 where a date already matched: linear, not quadratic
        for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
            for match in pattern.finditer(text):
                day, year = int(match["d"]), int(match["y"])
                # None for a name the case-blind pattern matched through a look-alike letter
                # ("Auguſt", "APRİL"): read as no date
                month = MONTHS.get(match["m"].lower())
                if 1 <= day <= 31 and month is not None:
                    found += [f"{year:04d}-{month:02d}-{day:02d}", str(year)]
                    _cover(covered, match.span())
        for match in _MONTH_YEAR.finditer(text):
            month = MONTHS.get(match["m"].lower())
            if not covered[match.start()] and month is not None:
                found += [f"{int(match['y']):04d}-{month:02d}", match["y"]]
                _cover(covered, match.span())
        for match in _NUMBER.finditer(text):
            if covered[match.start()]:
                continue
            number = match.group().replace(",", "")
            digits = sum(ch.isdigit() for ch in number)
            if _YEAR.fullmatch(number) or digits >= self.min_number_digits:
                found.append(number)
        return found

    def _capitalised_spans(self, text: str) -> list[str]:
        found: list[str] = []
        words = list(_WORD.finditer(text))
        i = 0
        while i < len(words):
            word = words[i].group()
            if not word[0].isupper():
                i += 1
                continue
            span_end = i
            j = i + 1
            while j < len(words):
                # stop at punctuation between words ("Paris, France" is two entities)
                gap = text[words[j - 1].end() : words[j].start()]
                if gap.strip():
                    break
                nxt = words[j].group()
                if nxt[0].isupper():
                    span_end = j
                    j += 1
                elif nxt.lower() in CONNECTORS and j + 1 < len(words):
                    j += 1
                else:
                    break
            length = span_end - i + 1
            start_of_sentence = i == 0 or _ends_sentence(
                text[words[i - 1].end() : words[i].start()]
            )
            first = word.lower()
            if length == 1:
                if self.include_single_words and first not in STOP_CAPITALISED:
                    found.append(normalize_word(word))
            elif length <= self.max_span_words:
                span = text[words[i].start() : words[span_end].end()]
                if start_of_sentence and first in STOP_CAPITALISED and first not in {"the"}:
                    span = text[words[i + 1].start() : words[span_end].end()]
                found.append(normalize_entity(span))
            i = span_end + 1
        return found
