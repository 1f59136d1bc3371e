"""Other forms of a person's name, the way people write it.

A passage's subject is read under the name its first sentence gives
(*Lieutenant Colonel John Augustus Conolly VC*, *Timothy Burstall AM*, *William Christy
Cabanne*), while other passages and questions write the person shorter: *John Conolly*,
*Tim Burstall*, *Christy Cabanne*. :func:`name_aliases` gives the forms such a name is also
written in, so a text that writes one of them names the passage:

- ranks, titles and honorifics before the name (*Lieutenant Colonel*, *Sir*, *Prince*) and
  post-nominal letters and suffixes after it (*VC*, *AM*, *KStJ*, *Jr*; not a regnal number
  such as *II*) are dropped;
- the surname (the last word with the particles before it: *de Crécy*, *von Borsody*,
  *of Bavaria*) is kept with any one or more of the given names, in order (middle names are
  optional, and a person may go by a middle name); a name *of* a place keeps its first
  given name (*Joseph Ferdinand of Bavaria*, never *Ferdinand of Bavaria*, a different
  duke);
- a ruler's name (*Robert II of Dreux*, *Frederick, Prince of Anhalt-Harzgerode*) is also
  written with any rank after a comma (*Robert II, Count of Dreux*) or none;
- a last surname of one word may be dropped from a name of three words or more, the rest
  kept as it is (*Ventura Pons* for *Ventura Pons Sala*: a second surname; *Shirley
  Temple* for *Shirley Temple Black*: a married name);
- the first given name may be shortened to its first three to five letters (*Tim*,
  *Chris*, *Don*) when it is longer, or written in a familiar form of
  :data:`FAMILIAR_NAMES` (*Frank Sinatra* for *Francis Albert Sinatra*, *Eddie Romero* for
  *Edgar Sinco Romero*); the given names after the first, or all of them, may
  be written as initials (*Enzo G. Castellari*, *P. Bhaskaran*).

Only names of two to six capitalised words (particles aside) get aliases, at most four
given names are varied, and an alias always has two words or more: a surname or a given
name alone names too many people. An alias is weaker than a name: a text that writes it
names the passage only when no passage is known by it and no other passage shares it
(:func:`~rag_multihop.multihop.titles.name_variants`).

Example:
    >>> name_aliases("Lieutenant Colonel John Augustus Conolly VC")[:3]
    ('John Augustus Conolly', 'John Conolly', 'Augustus Conolly')
    >>> "Tim Burstall" in name_aliases("Timothy Burstall AM")
    True
    >>> name_aliases("Ed Wood")
    ('E. Wood',)
    >>> name_aliases("Robert II")
    ()
"""

from __future__ import annotations

import re
from itertools import combinations

HONORIFICS = frozenset(
    """Sir Dame Lord Lady Prince Princess King Queen Count Countess Duke Duchess Archduke
    Archduchess Grand Baron Baroness Marquis Marquess Earl Viscount Emperor Empress Tsar
    Captain Lieutenant Colonel General Major Admiral Commander Sergeant Corporal Private
    Brigadier Marshal Field Air Vice Rear Commodore Dr Doctor Professor Prof Saint St
    Reverend Rev Father Brother Sister Mother Pope Cardinal Bishop Archbishop Rabbi Imam
    Sheikh Shaikh Sultan Emir Mr Mrs Ms Miss Madame Monsieur Judge Justice Senator Governor
    President Chief Blessed""".split()  # noqa: SIM905
)
"""Words that stand before a name without being part of it."""

PLACE_AND_THING_WORDS = frozenset(
    """Society Medal Award Awards Prize Trophy Cup Stakes Lecture Fellowship Scholarship
    Institute Institution Foundation Academy School College University Library Museum Gallery
    Collection Theatre Theater Studio Studios Orchestra Festival Records Company Corporation
    Center Centre Stadium Arena Station Airport Hospital Cathedral Chapel Memorial Monument
    House Building Tower Palace Hotel Gardens Bridge Highway Boulevard Avenue Road Square
    Act""".split()  # noqa: SIM905
)
"""Last words that make a name an institution's, a place's or a thing's named after a
person (*Langston Hughes House*, *Nobel Prize*), never a person's: such a name gets no
aliases (*Langston Hughes* is the poet, not his house). Words that are also common
surnames (*Hall*, *Park*, *Church*, *Lake*, *Street*) are left out."""

PLACE_FIRST_WORDS = frozenset(
    {"Teatro", "Museo", "Palazzo", "Estadio", "Stadio", "Fort", "Mount", "Lake", "Camp", "Cape"}
)
"""First words that make a name a place's (*Teatro Giuseppe Verdi*, *Fort Worth*): no
aliases either."""

GIVEN_NAME_RANKS = frozenset({"Earl", "Prince", "King", "Duke", "Major", "Marshal", "Baron"})
"""Words of :data:`HONORIFICS` that are also given names: before an initial (*Earl J.
Valiquette*) such a word is the given name, since a rank stands before a name."""

PARTICLES = frozenset(
    {"de", "da", "del", "della", "di", "do", "dos", "das", "du", "des", "von", "van", "der",
     "den", "ter", "la", "le", "y", "al", "el", "bin", "ibn", "ben", "of", "zu", "af"}
)  # fmt: skip
"""Lower-case words that belong to a surname (``de Crécy``, ``of Bavaria``)."""

DROPPED_PARTICLES = frozenset({"de", "von", "van", "du", "des", "di", "da"})
"""Particles a surname is also written without (*Beauchamp* for *de Beauchamp*)."""

MAX_GIVEN = 4
"""At most this many given names are varied (further ones are kept as they are)."""

NICKNAME_LETTERS = (3, 4, 5)
"""A first given name longer than these is also written by its first so many letters."""


_FAMILIAR_TABLE = """
Albert:Al,Bert Alexander:Alex,Sandy Alfred:Fred,Freddie,Alf Andrew:Andy,Drew
Anthony:Tony Antonio:Tony Arthur:Art Benjamin:Ben,Benny Bernard:Bernie Charles:Charlie,Chuck
Christopher:Chris,Kit Daniel:Dan,Danny David:Dave,Davey Donald:Don,Donnie Douglas:Doug
Edgar:Ed,Eddie Edmund:Ed,Eddie,Ned Edward:Ed,Eddie,Ted,Teddy,Ned Edwin:Ed,Eddie
Elizabeth:Liz,Beth,Betty,Bess Eugene:Gene Francis:Frank,Frankie Franklin:Frank
Frederick:Fred,Freddie Gerald:Jerry,Gerry Gregory:Greg Harold:Harry,Hal Henry:Harry,Hank
Herbert:Herb,Bert Isaac:Ike Jacob:Jake James:Jim,Jimmy,Jamie Jerome:Jerry John:Jack,Johnny
Jonathan:Jon Joseph:Joe,Joey Katherine:Kate,Kathy Catherine:Kate,Cathy Kenneth:Ken,Kenny
Lawrence:Larry Laurence:Larry Leonard:Len,Lenny Louis:Lou,Louie Margaret:Peggy,Maggie,Meg
Matthew:Matt Michael:Mike,Mickey Nicholas:Nick Patrick:Pat,Paddy Patricia:Pat,Patty
Peter:Pete Raymond:Ray Richard:Dick,Rick,Rich,Richie Robert:Bob,Bobby,Rob,Robbie,Bert
Ronald:Ron,Ronnie Samuel:Sam,Sammy Stephen:Steve Steven:Steve Theodore:Ted,Teddy,Theo
Thomas:Tom,Tommy Timothy:Tim Vincent:Vince William:Bill,Billy,Will,Willie,Willy
"""
FAMILIAR_NAMES: dict[str, tuple[str, ...]] = {
    formal: tuple(familiar.split(","))
    for formal, familiar in (entry.split(":") for entry in _FAMILIAR_TABLE.split())
}
"""Familiar forms of common given names (*Frank* for *Francis*, *Chuck* for *Charles*),
which a first given name is also written with."""

_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")


def _is_roman(word: str) -> bool:
    return bool(word) and _ROMAN.fullmatch(word) is not None


SUFFIXES = frozenset({"Jr", "Sr", "Jnr", "Snr"})
"""Generational suffixes dropped after a name (a regnal number such as *II* is kept)."""


def _is_initial(word: str) -> bool:
    """One capital letter, with or without its full stop (*J.*, *J*)."""
    letters = word.rstrip(".")
    return len(letters) == 1 and letters.isupper()


def _post_nominal(word: str) -> bool:
    """Letters after a name: *VC*, *KStJ*, *PhD*, *Jr* (mostly capitals, not a regnal
    number)."""
    letters = word.rstrip(".,")
    if letters in SUFFIXES:
        return True
    capitals = sum(c.isupper() for c in letters)
    return (
        2 <= len(letters) <= 6
        and letters.isalpha()
        and capitals >= max(2, len(letters) / 2)
        and not _is_roman(letters)
    )


def _capitalised(word: str) -> bool:
    head = word.replace("-", "").replace("'", "").replace(".", "")
    return bool(head) and head[0].isupper() and head.isalpha()


def core_name(name: str) -> str:
    """``name`` without leading honorifics and trailing post-nominal letters (at least one
    word kept).

    >>> core_name("Lieutenant Colonel John Augustus Conolly VC")
    'John Augustus Conolly'
    >>> core_name("Robert II")
    'Robert II'
    >>> core_name("Earl J. Valiquette")
    'Earl J. Valiquette'
    """
    words = name.split()
    start, end = 0, len(words)
    while end - start > 1 and words[start].rstrip(".") in HONORIFICS:
        if words[start] in GIVEN_NAME_RANKS and _is_initial(words[start + 1]):
            break
        start += 1
    while end - start > 1 and _post_nominal(words[end - 1]):
        end -= 1
    return " ".join(words[start:end])


def name_aliases(name: str) -> tuple[str, ...]:
    """Other forms people write the person ``name`` in (see the module docstring), without
    ``name`` itself, each of two words or more; empty when ``name`` does not look like a
    person's name."""
    ruler = _RULER.fullmatch(name)
    if ruler is not None:
        return tuple(f for f in _ruler_forms(*ruler.groups()) if f != name)
    core = core_name(name)
    words = re.sub(r"(?<=\w)- +(?=\w)", "-", core).split()
    if len(words) < 2 or any(_is_roman(w) for w in words):
        return _only_core(name, core)
    if words[-1] in PLACE_AND_THING_WORDS or words[0] in PLACE_FIRST_WORDS:
        return ()
    surname_start = len(words) - 1
    while surname_start > 0 and words[surname_start - 1] in PARTICLES:
        surname_start -= 1
    given, surname = words[:surname_start], words[surname_start:]
    if not 1 <= len(given) <= 5 or not all(_capitalised(w) for w in [*given, surname[-1]]):
        return _only_core(name, core)
    of_place = "of" in surname
    varied, kept = given[:MAX_GIVEN], given[MAX_GIVEN:]
    forms: dict[str, None] = {}
    if core != name:
        forms[core] = None
    for size in range(len(varied), 0, -1):
        for chosen in combinations(range(len(varied)), size):
            if of_place and chosen[0] != 0:
                continue
            forms[" ".join([*(varied[i] for i in chosen), *kept, *surname])] = None
    first = given[0]
    if first.isalpha() and not of_place:
        for letters in NICKNAME_LETTERS:
            if len(first) > letters + 1:
                forms[" ".join([first[:letters], *surname])] = None
        for familiar in FAMILIAR_NAMES.get(first, ()):
            forms[" ".join([familiar, *surname])] = None
        initials = [f"{w[0]}." for w in given]
        forms[" ".join([first, *initials[1:], *surname])] = None
        forms[" ".join([*initials, *surname])] = None
    if len(surname) == 2 and surname[0] in DROPPED_PARTICLES:
        # the surname without its particle, as English often writes it (*Richard
        # Beauchamp* for *Richard de Beauchamp*)
        forms[" ".join([*given, surname[-1]])] = None
        forms[" ".join([first, surname[-1]])] = None
    if len(given) >= 2 and len(surname) == 1 and not of_place and not _is_initial(given[-1]):
        # a second surname after the one people use (*Ventura Pons Sala*) or a married
        # name (*Shirley Temple Black*): the name without it, as it is
        forms[" ".join(words[:-1])] = None
    forms.pop(name, None)
    return tuple(forms)


RANKS = (
    "King", "Queen", "Prince", "Princess", "Duke", "Duchess", "Count", "Countess",
    "Margrave", "Landgrave", "Elector", "Archduke", "Archduchess", "Marquess", "Earl",
    "Lord", "Lady", "Emperor", "Empress", "Grand Duke", "Viscount", "Baron",
)  # fmt: skip
"""Ranks a ruler's name is also written with: *Robert II of Dreux* is *Robert II, Count of
Dreux*."""

_RULER = re.compile(
    r"(?:(?:" + "|".join(RANKS) + r") )?([A-Z][^\W\d_]+(?: [IVXLC]+)?)"
    r"(?:, (?:" + "|".join(RANKS) + r"),?)? (of) ([A-Z][\w' -]*)"
)
"""A ruler's name: a given name, an optional regnal number, ``of`` a place (a rank before
the name or after a comma allowed)."""
_RULER_OPENING = re.compile(
    r"([A-Z][^\W\d_]+(?: [IVXLC]+)?, (?:" + "|".join(RANKS) + r") of [A-Z][\w'-]*"
    r"(?: [A-Z][\w'-]*)*)(?:,| (?:is|was|became)\b)"
)


def ruler_opening(sentence: str) -> str | None:
    """The ruler's name ``sentence`` opens with, rank after a comma included, when a comma
    or a copula follows it (*John, Count of Brienne, was*), else ``None``.

    >>> ruler_opening("John, Count of Brienne, was a nobleman.")
    'John, Count of Brienne'
    """
    match = _RULER_OPENING.match(sentence)
    return match.group(1) if match else None


def _ruler_forms(given: str, particle: str, place: str) -> tuple[str, ...]:
    """*Given of Place*, and *Given, Rank of Place* for every rank of :data:`RANKS`."""
    return (
        f"{given} {particle} {place}",
        *(f"{given}, {rank} {particle} {place}" for rank in RANKS),
    )


def _only_core(name: str, core: str) -> tuple[str, ...]:
    return (core,) if core != name and len(core.split()) >= 2 else ()
