"""Headings in ``"<file> › <heading>"`` titles: the part of the title that names a passage.

Folder readers (the chats', docs/folders.md) title a passage by its file and the nearest
heading above it: ``"notes › Marit Hallendor"``, ``"rope works › Later years"``, and PDF
pages ``"report › page 3"``. When the heading reads as a name (title case: each of its
words of four letters or more but a preposition capitalised; not a page number), it is a
name of the passage beside the whole title, so links, subjects and the bridge find the
passage by ``Marit Hallendor`` as they find an encyclopedic title. A sentence-case heading
(``Later years``) or a page number names no subject. A title-cased generic heading
(``Early Life``) is read as a name too: nothing in the title alone tells it from a name.

Example:
    >>> split_title("notes › Marit Hallendor")
    ('notes', 'Marit Hallendor')
    >>> heading_name("notes › Marit Hallendor")
    'Marit Hallendor'
    >>> heading_name("rope works › Later years") is None
    True
    >>> heading_name("report › page 3") is None
    True
"""

from __future__ import annotations

import re

from rag_multihop.text import visible

HEADING_SEPARATOR = " › "
"""Between a passage's file and its heading in a folder reader's title."""

_PAGE = re.compile(r"page\s+\d+", re.IGNORECASE)
_LETTERS = re.compile(r"[^\W\d_]+")
_LONG_WORD = 4
"""Words of this many letters or more must be capitalised in a heading that is a name..."""
_LOWER_IN_NAMES = frozenset(
    {"about", "above", "across", "after", "against", "along", "among", "around", "before",
     "behind", "below", "beneath", "beside", "between", "beyond", "from", "into", "near",
     "onto", "over", "past", "through", "toward", "towards", "under", "upon", "with",
     "within", "without"}
)  # fmt: skip
"""...except the prepositions that title case leaves in lower case (``Gulls over Kelmsby``)."""


def split_title(title: str) -> tuple[str, str | None]:
    """``(file part, heading)`` of a ``"<file> › <heading>"`` title, split at the first
    separator; ``(title, None)`` for a title without one (or with an empty heading)."""
    head, separator, heading = title.partition(HEADING_SEPARATOR)
    heading = heading.strip()
    if not separator or not heading:
        return title, None
    return head.strip(), heading


def heading_name(title: str) -> str | None:
    """The heading of a ``"<file> › <heading>"`` title when it reads as a name: it opens with
    a capital, every word of :data:`_LONG_WORD` letters or more but a title-case preposition
    does too, and it is no PDF page (``page 3``); else ``None``."""
    heading = split_title(title)[1]
    if heading is None or _PAGE.fullmatch(heading):
        return None
    words = _LETTERS.findall(visible(heading))
    if not words or not words[0][:1].isupper():
        return None
    if any(
        len(w) >= _LONG_WORD and not w[:1].isupper() and w not in _LOWER_IN_NAMES for w in words
    ):
        return None
    return heading
