"""Passage subjects read from the text, for passages whose title does not name them.

An encyclopedic title names its passage's subject; an opaque file name (``doc-3f2a``) or a
chunk's document name does not. For such a passage (no word of its title is in its text,
:func:`title_named_in_text`) the subjects
are the names its sentences open with when a copula follows: ``"Ed Wood is a 1994 film"``,
``"Gus Meins (March 6, 1893 – August 1, 1940), born ..., was a director"``, ``"The Humaya
River is a river"`` (``"Humaya River"``: a leading article is dropped). Pronouns and
sentence adverbials (``He``, ``In 2007``) are not names; a later sentence's single word is
a subject only when it opens a definition (``"Serac is the capital of ..."``). The first
sentence also gives the other names its subject goes by (``known professionally as Don
Medford``, ``née``, ``alias``, a translation in a parenthesis, ``X or Y (...)``, the name
from its quoted part on), a work's title written with lower-case words (``"Ven mi
corazón te llama is a 1942 film"``) and a ruler's name with its rank (``"John, Count of
Brienne, was"``). A chunk that holds the opening sentences of several passages gets each of
their subjects. The title index then knows a passage by its title, its subjects and their
aliases (:mod:`~rag_multihop.multihop.names`), so question names, title links and the
pair work on untitled passages and chunks.

Example:
    >>> text_subjects("Ed Wood is a 1994 film. He was born in 1924. Tim Burton (born 1958) "
    ...               "is a director.")
    ('Ed Wood', 'Tim Burton')
    >>> from rag_multihop import Passage
    >>> passage_names(Passage("x", "Ed Wood is a 1994 film.", "doc-3f2a"))
    ('doc-3f2a', 'Ed Wood')
    >>> passage_names(Passage("x", "Ed Wood is a 1994 film.", "Ed Wood (film)"))
    ('Ed Wood (film)',)
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache

from rag_multihop.multihop.headings import heading_name, split_title
from rag_multihop.multihop.names import name_aliases, ruler_opening
from rag_multihop.multihop.titles import name_key
from rag_multihop.types import Passage

NAMES_CACHE_SIZE = 65536
"""Passages whose names :func:`known_names` remembers."""

NAMES_VERSION = 7
"""The version of the names and aliases read from a passage (:func:`indexed_names` and the
aliases :func:`~rag_multihop.multihop.titles.name_variants` adds): raised whenever a change
gives some text other names, so that a persistent index whose names an older reader made
is not extended with names of the new one (version 2: familiar given names; 3: a
second surname dropped; 4: a rank that is also a given name kept before an initial, no
alias ending in an initial, none for an institution's or a place's name, and a case
name read whole: *Hirabayashi v. United States*, not *United States*; 5: the other names
an opening gives: a translation in its parenthesis, *X or Y*, *released as*, *sometimes
called*, a name without the words before its quoted part, *Henriette of France* for *Anne
"Henriette" of France*; a dash read as the opening's copula; brackets dropped like
parentheses; a surname's alias without its particle, *Richard Beauchamp*; a chunk cut
inside a parenthesis read from its end, no name without a letter or with half a
bracket; 6: a comma right before the opening's copula kept, *Boum sur Paris, is a film*,
*Catherine de' Medici (1519 – 1589), was*, *born* ending a name, *Henry Wharton* for
*Henry Wharton born in Leeds is*, and an opening's comma-ended name standing before an
apposition of any length, *Humphrey de Bohun, 7th Earl of Hereford, 6th Earl of Essex, ...,
was*; 7: words read through :func:`~rag_multihop.text.visible`, a soft hyphen or a
zero-width character no longer splitting one)."""

MAX_SUBJECTS = 8
"""At most this many subjects are read from one passage (the first ones)."""

_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:St|Dr|Mr|Jr|Sr|Mt|Ms|Lt|Co)\.)(?<!\bv\.)(?<!\bvs\.)"
    r"\s+(?=[A-Z0-9\"'(])"
)
"""A sentence ends at ``.``, ``!`` or ``?`` before a capital, not after an initial
(*H. Bruce Humberstone*), a short abbreviation (*Dr.*, *St.*) or a case name's *v.*
(*Roe v. Wade*)."""
_QUOTES = re.compile('["\u201c\u201d\u201e\u00ab\u00bb]')
_KNOWN_AS = re.compile(
    r"\b(?:(?:also|better|professionally|commonly|popularly|simply) )?(?:known|credited|billed)"
    r"(?: professionally| simply| popularly| mostly)? as (?:the )?|\ba\.?k\.?a\.? |\bn[ée]e "
    r"|\balias (?:as )?|\b(?:internationally |originally |also )?(?:released|retitled) as "
    r"|\b(?:sometimes|also|often|commonly) called "
)
"""What introduces another name of the subject: *known professionally as Don Medford*,
*also known as*, *née Nicol*, *internationally released as*, *sometimes called*."""
_TRANSLATED = re.compile(
    r"\(\s*(?:[A-Z][a-z]+(?: language)?\s*:|(?:[Ii]n [A-Z][a-z]+|literally|lit\.|translit\.)\s)"
    r"\s*([^;,()]+?)\s*[;,)]"
)
"""A name in another language or its translation, in a parenthesis of the opening sentence:
*(German: Der König von Kreuzberg)*, *(In French Vent d'est)*, *(literally A Jester's
Tale)*."""
_OR_NAMES = re.compile(
    r"(?:(?:The|A|An) )?([A-Z0-9][^,;:()]*?) or (?:(?:The|A|An) )?([A-Z0-9][^,;:()]*?)"
    r"(?:\s*\(|,? (?:is|was|are|were)\b)"
)
"""An opening that gives two names: *Tlilpotonqui or Tlilpotoncatzin (died 1503) was*,
*Les amies de ma femme or My Wife's Girlfriends is* (before a copula, only when both
have two words or more: *Dead or Alive is* is one title)."""
_LETTER = re.compile(r"[^\W\d_]")
_MONTH = re.compile(
    r"(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\b"
)
_DASH = re.compile(r"\s+[-\u2013\u2014]\s+")
"""A dash an opening sentence may write for its copula: *Borys Lankosz (born 1973) -
Polish film director*."""
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d]+)[\"\u201d]")
OPENING_CHARS = 300
"""The characters of an opening sentence read for *X or Y* and quoted names (a name comes
first; a bound that keeps the reading linear in the text)."""
MAX_OTHER_NAME_WORDS = 8
"""The longest name an opening's parenthesis or *or* gives, in words."""
FIRST_SENTENCE_WORDS = 8
"""A passage's first sentence whose subject runs through lower-case words (*Ven mi corazón
te llama is a 1942 film*) gives the words before its copula as a name when they are at
most this many and start with a capital."""
_PARENTHETICAL = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\])")
_SPACE_BEFORE_COMMA = re.compile(r"\s+(?=[,;])")
_NON_SPACE = re.compile(r"\S+")
MAX_NESTING = 8
"""Parentheses nested deeper than this are left in the text (each level is a pass over it)."""
_COPULAS = frozenset(
    {"is", "was", "are", "were", "has", "had", "became", "refers", "remains", "serves", "served"}
)
_ARTICLES = frozenset({"The", "A", "An"})
_CONNECTORS = frozenset(
    {"of", "the", "de", "da", "del", "della", "di", "do", "dos", "von", "van", "der", "den",
     "du", "la", "le", "les", "y", "and", "&", "al", "bin", "ibn", "for", "on", "upon", "in",
     "to", "a", "an", "at", "v.", "vs."}
)  # fmt: skip
_PRONOUNS = frozenset(
    {"He", "She", "It", "They", "We", "I", "You", "This", "That", "These", "Those", "His", "Her",
     "Its", "Their", "There", "Here", "However", "Although", "Also", "Some", "Many", "Most",
     "Other", "Both", "Each", "All", "Today", "If", "Little", "Much", "Nothing", "Such",
     "Another", "Thus", "Instead", "Neither", "Either"}
)  # fmt: skip
_ADVERBIAL = frozenset(
    {"In", "On", "At", "After", "Before", "During", "When", "While", "As", "For", "From", "By",
     "With", "Since", "Following", "According", "Despite", "Under", "Between", "Among",
     "Upon", "Unlike", "Like", "One", "Two"}
)  # fmt: skip
"""Words that open a sentence adverbial (``In 2007,``): such a run is no name when it ends
with a comma or holds a number."""
_RELATIVES = frozenset({"who", "whom", "whose", "which", "that"})
"""Relative pronouns: words before one are no name (*Unionist politician who served*), and
a preposition before one after a comma makes the name an object (*Awards, for which*)."""
_JOINERS = frozenset({"and", "also"})
"""Words that may stand between a name and its copula (``X ... and is a diplomat``)."""
_APPOSITIVE_WORDS = 12
"""A copula this many words after a comma-ended name still makes it the subject
(``"Gus Meins, born Gustave Luley, was a director"``)."""


def _clean(word: str) -> str:
    return word.strip(".,;:\"'!?")


def _leading_name(sentence: str, appositive_words: int | None = _APPOSITIVE_WORDS) -> str | None:
    """The name ``sentence`` (parentheticals removed) opens with when a copula follows it,
    else ``None``; after a comma ending the name, within ``appositive_words`` words (``None``:
    anywhere in the sentence, as in an opening's *X, 7th Earl of Y, ..., was*)."""
    words = sentence.split()
    start = 1 if words and words[0] in _ARTICLES else 0
    end = start
    while end < len(words):
        word = words[end]
        capital = word[:1].isupper() or word[:1].isdigit()
        if not capital:
            after = end
            while after < len(words) and words[after] in _CONNECTORS:
                after += 1
            if end == start or after == end or after == len(words):
                break
            if not words[after][:1].isupper():
                break
        end += 1
        if word.endswith((",", ";", ":")):
            break
    name_words = [_clean(w) for w in words[start:end]]
    while name_words and name_words[-1] in _CONNECTORS:
        name_words.pop()
    if not name_words or name_words[0] in _PRONOUNS or not name_key(" ".join(name_words)):
        return None
    ends_with_comma = words[end - 1].endswith(",")
    if name_words[0] in _ADVERBIAL and (
        ends_with_comma or any(w[:1].isdigit() for w in name_words)
    ):
        return None
    following = [_clean(w) for w in words[end:]]
    if following[:1] and following[0] in _JOINERS:
        following = following[1:]
    if not ends_with_comma:
        window = 1
    else:
        window = len(following) if appositive_words is None else appositive_words
    if not any(w in _COPULAS for w in following[:window]):
        return None
    if ends_with_comma and following[:1] and following[0].capitalize() in _PRONOUNS:
        return None  # "Additionally, he was": an adverb, not a name
    if ends_with_comma and following[1:2] and following[1] in _RELATIVES:
        return None  # "Awards, for which he was": an object, not a name
    return " ".join(name_words)


def _first_sentence_name(sentence: str) -> str | None:
    """The words before the first sentence's copula when :func:`_leading_name` reads none:
    a title of a work written with lower-case words or opening with a pronoun (*I Cover
    the Underworld*), ``X or Y`` (``X``), ``X née Y``, ``X born Y``, a comma right before
    the copula (*Boum sur Paris, is*); or the name before *known as*."""
    known = _KNOWN_AS.search(sentence)
    if known is not None:
        before = sentence[: known.start()].rstrip(" ,")
        if not before:
            return None
        sentence = f"{before} is"
        name = _leading_name(sentence)
        if name is not None:
            return name
    words = sentence.split()
    start = 1 if words and words[0] in _ARTICLES else 0
    for end in range(start + 1, min(len(words), start + FIRST_SENTENCE_WORDS + 1)):
        if _clean(words[end]) in _COPULAS:
            break
    else:
        return None
    name_words = [_clean(w) for w in words[start:end]]
    for stop in ("or", "née", "nee", "born", "Born", "and", "also"):
        if stop in name_words[1:]:  # a title may open with one (*Born in the USA*)
            name_words = name_words[: name_words.index(stop, 1)]
    if (
        not name_words
        or not name_words[0][:1].isupper()
        or (name_words[0] in _PRONOUNS and _pronoun_led(name_words))
        or (name_words[0] in _ADVERBIAL and _adverbial(name_words))
        or any(w.endswith((",", ";")) for w in words[start : end - 1])
        or any(w in _RELATIVES for w in name_words)
        or not name_key(" ".join(name_words))
    ):
        return None  # a relative pronoun: a clause (*Unionist politician who served*)
    return " ".join(name_words)


def _later_subject(name: str, sentence: str, text: str) -> bool:
    """Whether a name read from a sentence after the first is a subject of its own: two
    words or more, or one word that opens a definition (*Serac is the capital of ...*, a
    passage that starts inside a chunk) and is not written before; a later sentence's one
    word is mostly someone's first name or surname (*Franklin was born in Memphis*)."""
    if len(name.split()) > 1:
        return True
    defines = re.match(rf"{re.escape(name)} (?:is|was|are|were) (?:a|an|the) ", sentence)
    return defines is not None and text.find(name) == text.find(sentence)


_CLAUSE_PRONOUNS = frozenset(
    {"He", "She", "It", "Its", "They", "His", "Her", "Their", "We", "You", "This", "These",
     "That", "Those"}
)  # fmt: skip
"""Pronouns that open a clause about something named before (*Its music video was*)."""


def _pronoun_led(words: list[str]) -> bool:
    """Whether words opening with a pronoun are no title: one word, or a clause pronoun
    before a lower-case word (*Its music video was*; not *I Cover the Underworld*, *All
    Souls*, *There by the Grace of God*)."""
    return len(words) == 1 or (words[0] in _CLAUSE_PRONOUNS and not words[1][:1].isupper())


def _adverbial(words: list[str]) -> bool:
    """Whether words opening with an adverbial word (*In*, *One*) are no title: one word, a
    number or a pronoun among them (*In 2007 it was*; not *One More Time with Feeling*)."""
    return len(words) == 1 or any(w[:1].isdigit() or w.capitalize() in _PRONOUNS for w in words[1:])


def _other_names(sentence: str) -> list[str]:
    """The names ``sentence`` gives its subject after *known as*, *née* and the like."""
    found = []
    spans = [(m.start(), m.group()) for m in _NON_SPACE.finditer(sentence)]
    starts = [start for start, _ in spans]
    for match in _KNOWN_AS.finditer(sentence):  # the words after each, split once
        words: list[str] = []
        for at in range(bisect_left(starts, match.end()), len(spans)):
            word = spans[at][1]
            clean = _clean(word.strip("()[]"))
            if clean in ("and", "or") or not (
                clean[:1].isupper() or (words and clean in _CONNECTORS)
            ):
                break
            words.append(clean)
            if word.endswith((",", ";", ":", ".", ")", "]")) and not re.fullmatch(r"[A-Z]\.", word):
                break
        while words and words[-1] in _CONNECTORS:
            words.pop()
        if words and words[0] not in _PRONOUNS and name_key(" ".join(words)):
            found.append(" ".join(words))
    return found


def _opening_names(sentence: str) -> list[str]:
    """The other names an opening sentence (quotes removed) gives its subject beyond *known
    as*: translations in its parentheses, and both sides of *X or Y* (before a parenthesis,
    or before the copula when both have two words or more).

    >>> _opening_names("East Wind (In French Vent d'est) is a film.")
    ["Vent d'est"]
    >>> _opening_names("Tlilpotonqui or Tlilpotoncatzin (died 1503) was a ruler.")
    ['Tlilpotonqui', 'Tlilpotoncatzin']
    """
    found = [m.group(1) for m in _TRANSLATED.finditer(sentence)]
    match = _OR_NAMES.match(sentence[:OPENING_CHARS])
    if match is not None and (
        sentence[match.end() - 1] == "(" or all(len(name.split()) > 1 for name in match.groups())
    ):
        found.extend(match.groups())
    return [
        name.strip()
        for name in found
        if name.strip()[:1].isupper() or name.strip()[:1].isdigit()
        if len(name.split()) <= MAX_OTHER_NAME_WORDS and name_key(name)
    ]


def _nickname_names(sentence: str, subject: str) -> list[str]:
    """The subject as known by the quoted word(s) inside its name: *Anne "Henriette" of
    France* is also *Henriette of France*, *Melvin Eugene "Tony" Bettenhausen* *Tony
    Bettenhausen* (the words before the quote dropped).

    >>> _nickname_names('Anne "Henriette" of France was a princess.', "Anne Henriette of France")
    ['Henriette of France']
    """
    found = []
    for match in _QUOTED.finditer(sentence[:OPENING_CHARS]):
        quoted = match.group(1).strip()
        at = subject.find(quoted)
        if at > 0 and subject[at - 1] == " " and at + len(quoted) < len(subject):
            found.append(subject[at:])
    return found


def _part_of_known(name: str, known: dict[str, None]) -> bool:
    """Whether every word of ``name`` is a word of one name read before (*Franklin* after
    *Aretha Louise Franklin*: the same person, by a name too short to look for)."""
    words = set(name_key(name).split())
    return any(words <= set(name_key(other).split()) for other in known)


def _after_cut_parenthesis(text: str) -> str:
    """``text`` after the end of a parenthesis it starts inside (a chunk cut in the middle
    of *(1892 – 1970)* opens with *1970) was an actor*, no name), else ``text``; a text
    whose first word could start a name keeps it (*Tsai Huang-liang; born 1960) is*, a
    parenthesis that lost its start).

    >>> _after_cut_parenthesis("1510) was a prelate. Rope is a film.")
    ' was a prelate. Rope is a film.'
    """
    close, opening = text.find(")"), text.find("(")
    cut = close >= 0 and (opening < 0 or close < opening)
    start = text.lstrip()
    if cut and (not start[:1].isupper() or _MONTH.match(start)):
        return text[close + 1 :]
    return text


def text_subjects(text: str) -> tuple[str, ...]:
    """The names ``text``'s sentences open with when a copula follows (first
    :data:`MAX_SUBJECTS`, without repeats, a leading article and quotes dropped), the other
    names the opening sentence gives them (*known as*, *née*), and, when the first
    sentence opens with no such name, the words before its copula (a title written with
    lower-case words, :data:`FIRST_SENTENCE_WORDS`)."""
    names: dict[str, None] = {}
    text = _after_cut_parenthesis(text)
    quoted = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    plain = _QUOTES.sub("", text).strip()
    opening = _SENTENCE.split(plain, maxsplit=1)[0]
    others = _other_names(opening) + _opening_names(opening)
    for _ in range(MAX_NESTING):  # innermost parentheses first
        stripped = _PARENTHETICAL.sub("", plain)
        if stripped == plain:
            break
        plain = stripped
    plain = _SPACE_BEFORE_COMMA.sub("", plain)
    for number, sentence in enumerate(_SENTENCE.split(plain)):
        name = ruler_opening(sentence) or _leading_name(
            sentence, None if number == 0 else _APPOSITIVE_WORDS
        )
        if name is None and number == 0:
            name = _first_sentence_name(sentence) or _leading_name(
                _DASH.sub(" is ", sentence, count=1)
            )
        if number == 0 and name is not None:
            others += _nickname_names(quoted, name)
        if name is None or (number > 0 and not _later_subject(name, sentence, plain)):
            if number == 0:  # the opening's other names stand without its subject
                names.update(dict.fromkeys(others))
            continue
        if names and _part_of_known(name, names):
            continue
        names[name] = None
        if number == 0:
            names.update(dict.fromkeys(others))
        if len(names) >= MAX_SUBJECTS:
            break
    read = (_balanced(name) for name in names)
    return tuple(dict.fromkeys(name for name in read if _LETTER.search(name)))[:MAX_SUBJECTS]


def _balanced(name: str) -> str:
    """``name`` without a bracket it does not open or close (*Élan Vital)*, *Return of the
    Jedi(*: a chunk's cut or a lost space)."""
    for opening, closing in ("()", "[]"):
        if name.count(opening) != name.count(closing):
            name = name.replace(opening, "").replace(closing, "").strip()
    return name


def title_named_in_text(title: str, text: str) -> bool:
    """Whether ``text`` holds a word of ``title`` (of three letters or more, not a number):
    then the title speaks of what the text does, as encyclopedic titles do, and no subject
    is read; an opaque id or a chunk's document name shares no word with its text.

    >>> title_named_in_text("William I of Württemberg", "William I was King of Wurttemberg.")
    True
    >>> title_named_in_text("doc-3f2a9c", "Ed Wood is a 1994 film.")
    False
    """
    words = set(name_key(text).split())
    return any(
        len(token) >= 3 and not token.isdigit() and token in words
        for token in name_key(title).split()
    )


def passage_names(passage: Passage) -> tuple[str, ...]:
    """The names a passage is known by: its title; the heading of a ``"<file> › <heading>"``
    title when it reads as a name (:func:`~rag_multihop.multihop.headings.heading_name`);
    plus the subjects read from its text when the text holds no word of that heading (of the
    title's file part when no heading names it). Remembered by title and text: the bridge
    judge asks for the same candidates' names query after query.

    >>> passage_names(Passage("n#1", "She was born in Oslo.", "notes › Marit Hallendor"))
    ('notes › Marit Hallendor', 'Marit Hallendor')
    """
    names = _names(passage.title, passage.text)
    return names if passage.title else names[1:]


def indexed_names(passage: Passage) -> tuple[str, ...]:
    """:func:`passage_names` with the title always first, even when empty: what the title
    index reads (:func:`~rag_multihop.multihop.titles.name_variants`: a title is looked for
    as written, the subjects read from the text also under their aliases).

    >>> indexed_names(Passage("x", "Ed Wood is a 1994 film."))
    ('', 'Ed Wood')
    """
    return _names(passage.title, passage.text)


def names_with_aliases(passage: Passage) -> tuple[str, ...]:
    """:func:`passage_names` and the aliases of the subjects read from the text
    (:func:`~rag_multihop.multihop.names.name_aliases`): every form a text may name the
    passage by, for a reader that looks for one candidate's names at a time (the bridge
    judge), where an alias cannot take another passage's name.

    >>> names_with_aliases(Passage("x", "Sir Tatton Sykes was a baronet.", "doc-1"))[:3]
    ('doc-1', 'Sir Tatton Sykes', 'Tatton Sykes')
    """
    names = _names(passage.title, passage.text)
    aliases = (alias for subject in names[1:] for alias in name_aliases(subject))
    return tuple(dict.fromkeys((*passage_names(passage), *aliases)))


@lru_cache(maxsize=NAMES_CACHE_SIZE)
def _names(title: str, text: str) -> tuple[str, ...]:
    heading = heading_name(title)
    known = (title, heading) if heading else (title,)
    named = heading or split_title(title)[0]
    if named and title_named_in_text(named, text):
        return known
    return (*known, *(s for s in text_subjects(text) if s not in known))


def corpus_names(passages: Sequence[Passage]) -> list[tuple[str, ...]]:
    """:func:`indexed_names` of every passage, in order."""
    return [indexed_names(p) for p in passages]
