"""The signal vocabulary: what each name in ``Candidate.signals`` means, and one rule to check it.

Every method package exports ``SIGNALS``, a mapping from each signal name its stages write to
a short plain-words meaning (``rag_multihop.fusion.SIGNALS``, ``rag_multihop.bridge.SIGNALS``,
...). A name whose part varies is declared as a **template**: a placeholder in angle brackets
stands for

- ``<i>``: a position, one or more digits (``search_e<i>`` covers ``search_e1``, ``search_e2``);
- ``<system>``: the name a fused list was given (``FusionRetriever({"dense": ..., "graph":
  ...})`` writes ``dense``, ``dense_cal``, ``graph``, ``graph_cal``). Pass ``systems=`` to
  accept only those names; without it any lowercase identifier is accepted.

A name is looked up exactly first, then in the templates, the most specific (longest fixed
part) first; the meaning comes back with the placeholders filled in. A stage keeps the signals
of the candidates it was given, so a result is checked against its own vocabulary and those of
the stages it stands on (``check_signals(found, association.SIGNALS, index.SIGNALS)``).

Example:
    >>> vocabulary = {"judge": "judge score", "search_e<i>": "score in entity search <i>"}
    >>> signal_meaning("search_e2", vocabulary)
    'score in entity search 2'
    >>> undeclared({"judge", "bm25"}, vocabulary)
    ['bm25']
    >>> signal_meaning("dense_cal", {"<system>_cal": "<system> score, calibrated (0-1)"})
    'dense score, calibrated (0-1)'
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache

from rag_multihop.types import Candidate

Vocabulary = Mapping[str, str]
"""Signal name or template → its meaning in plain words."""

PLACEHOLDERS: Mapping[str, str] = {
    "i": r"[0-9]+",
    "system": r"[a-z][a-z0-9_]*",
}
"""The placeholders a template may hold, with the pattern each stands for."""

_PLACEHOLDER = re.compile(r"<([a-z]+)>")


@lru_cache(maxsize=256)
def _template(template: str) -> tuple[re.Pattern[str], int]:
    """The regex of ``template`` (one named group per placeholder) and its fixed length."""
    parts, end, fixed = [], 0, 0
    for match in _PLACEHOLDER.finditer(template):
        name = match.group(1)
        if name not in PLACEHOLDERS:
            raise ValueError(
                f"signal template {template!r} holds an unknown placeholder <{name}>; "
                f"known: {', '.join(f'<{p}>' for p in PLACEHOLDERS)}"
            )
        literal = template[end : match.start()]
        parts.append(re.escape(literal) + f"(?P<{name}>{PLACEHOLDERS[name]})")
        fixed, end = fixed + len(literal), match.end()
    parts.append(re.escape(template[end:]))
    return re.compile("".join(parts)), fixed + len(template) - end


def is_template(name: str) -> bool:
    """Whether ``name`` declares a family of names (it holds a ``<placeholder>``)."""
    return _PLACEHOLDER.search(name) is not None


def signal_meaning(
    name: str, *vocabularies: Vocabulary, systems: Collection[str] | None = None
) -> str | None:
    """The meaning of signal ``name`` in the first vocabulary that declares it (exact names
    before templates, longer fixed parts first), placeholders filled in; ``None`` when no
    vocabulary declares it. ``systems`` limits what ``<system>`` may stand for."""
    for vocabulary in vocabularies:
        if name in vocabulary and not is_template(name):
            return vocabulary[name]
    templates = [(t, m) for v in vocabularies for t, m in v.items() if is_template(t)]
    templates.sort(key=lambda item: -_template(item[0])[1])
    for template, meaning in templates:
        match = _template(template)[0].fullmatch(name)
        if match is None:
            continue
        values = match.groupdict()
        if systems is not None and "system" in values and values["system"] not in systems:
            continue
        for placeholder, value in values.items():
            meaning = meaning.replace(f"<{placeholder}>", value)
        return meaning
    return None


def undeclared(
    names: Iterable[str], *vocabularies: Vocabulary, systems: Collection[str] | None = None
) -> list[str]:
    """The names (sorted, each once) that no vocabulary declares."""
    return sorted({n for n in names if signal_meaning(n, *vocabularies, systems=systems) is None})


def check_signals(
    candidates: Iterable[Candidate | Mapping[str, float]],
    *vocabularies: Vocabulary,
    systems: Collection[str] | None = None,
) -> None:
    """``ValueError`` naming every signal of ``candidates`` (candidates or signal mappings)
    that no vocabulary declares, and the names that are declared."""
    names: set[str] = set()
    for item in candidates:
        names.update(item.signals if isinstance(item, Candidate) else item)
    unknown = undeclared(names, *vocabularies, systems=systems)
    if unknown:
        declared = sorted({n for v in vocabularies for n in v})
        raise ValueError(
            f"undeclared signal name(s) {unknown}; the vocabularies declare {declared}"
            + (f" with <system> in {sorted(systems)}" if systems is not None else "")
        )
