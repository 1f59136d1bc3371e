"""Passage-to-passage title links with their weights, specificity and anchor contexts.

Passage ``a`` links to passage ``c`` when ``a``'s text names ``c``'s title
(:class:`~rag_multihop.multihop.titles.TitleIndex`). Each link keeps:

- **weight** ``1 / (referents of the span)``: a name shared by two passages links to each
  with weight ½ (qualifiers found in ``a``'s text decide first: ``"Boston"`` in a text that
  also says ``Lincolnshire`` links to *Boston, Lincolnshire* alone);
- **specificity** of the target, ``log(N / (1 + in-links)) / log(N)`` in ``[0, 1]``: a page
  that many passages name (a country, a hub) says little about any one of them (the IDF of
  a link target);
- **context**: the word stems (first :data:`STEM_CHARS` letters) within ``window`` words
  either side of the name in ``a``, so a question's relation words ("directed", "born") can
  pick the link they are about.

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> corpus = Corpus([
    ...     Passage("a", "Polish Wedding was directed by Theresa Connelly.", "Polish Wedding"),
    ...     Passage("b", "Theresa Connelly is a director.", "Theresa Connelly"),
    ... ])
    >>> links = LinkGraph.build(corpus, TitleIndex([p.title for p in corpus]))
    >>> links.targets(0), sorted(links.context(0, 1))
    ({1: 1.0}, ['direc', 'polis', 'weddi'])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import sparse

from rag_multihop.corpus import Corpus
from rag_multihop.graph.build import EntityGraph
from rag_multihop.multihop.scoring import context_overlap
from rag_multihop.multihop.titles import TitleIndex, title_token, title_words
from rag_multihop.validation import check_positive_int

STEM_CHARS = 5
"""Letters of a word kept as its stem when contexts and questions are compared."""

DEFAULT_WINDOW = 12

STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or is was were are be been being who whom
    whose what which when where why how did does do that this these those as it its his her
    their than then he she they him them also not but had has have""".split()  # noqa: SIM905
)
"""Function words ignored when contexts and questions are compared."""


def stems(tokens: Sequence[str]) -> frozenset[str]:
    """Content-word stems of normalised ``tokens`` (stopwords and pure numbers dropped).

    >>> sorted(stems(["directed", "by", "the", "director", "1998"]))
    ['direc']
    """
    return frozenset(
        token[:STEM_CHARS] for token in tokens if token not in STOPWORDS and not token.isdigit()
    )


def specificity(counts: np.ndarray, total: int) -> np.ndarray:
    """``log(N / (1 + count)) / log(N)`` clipped to ``[0, 1]``, N = ``total`` passages: 1.0
    for something only one passage points at, 0.0 for something every passage does (an IDF).

    >>> specificity(np.array([0, 9, 99, 999, 9999]), 10_000).round(2).tolist()
    [1.0, 0.75, 0.5, 0.25, 0.0]
    """
    n = max(int(total), 2)
    values = np.log(n / (1.0 + np.asarray(counts, dtype=np.float64))) / math.log(n)
    return np.clip(values, 0.0, 1.0)


@runtime_checkable
class ContextOverlaps(Protocol):
    """Link contexts that answer :meth:`LinkGraph.context_overlaps` themselves (a
    persistent index's contexts are read from the source's text, which a question's stems
    may rule out without reading its tokens)."""

    def overlaps(
        self, source: int, targets: Sequence[int], question: frozenset[str]
    ) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class LinkGraph:
    """Title links between the passages of one corpus (build with :meth:`build`).

    Attributes:
        weights: ``(n, n)`` CSR, ``weights[a, c]`` the link weight of ``a`` → ``c``.
        specificity: per passage, the specificity of links *to* it.
        contexts: ``(a, c)`` → the stems around ``c``'s name in ``a``.
    """

    weights: sparse.csr_matrix
    specificity: np.ndarray
    contexts: Mapping[tuple[int, int], frozenset[str]]

    @classmethod
    def build(
        cls, corpus: Corpus, titles: TitleIndex, *, window: int = DEFAULT_WINDOW
    ) -> LinkGraph:
        """Find every title named in every passage's text (linear in the corpus)."""
        window = check_positive_int(window, "window")
        if len(titles) != len(corpus):
            raise ValueError(
                f"the title index has {len(titles)} titles but the corpus {len(corpus)} passages"
            )
        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        contexts: dict[tuple[int, int], frozenset[str]] = {}
        for a, passage in enumerate(corpus):
            for c, weight, context in passage_links(a, passage.text, titles, window=window):
                rows.append(a)
                cols.append(c)
                values.append(weight)
                contexts[(a, c)] = context
        n = len(corpus)
        matrix = sparse.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()
        in_links = np.asarray((matrix > 0).sum(axis=0)).ravel()
        return cls(matrix, specificity(in_links, n), contexts)

    @property
    def n_links(self) -> int:
        return int(self.weights.nnz)

    def targets(self, row: int) -> dict[int, float]:
        """The passages ``row`` links to, with the link weights."""
        start, end = self.weights.indptr[row], self.weights.indptr[row + 1]
        return dict(
            zip(
                self.weights.indices[start:end].tolist(),
                self.weights.data[start:end].tolist(),
                strict=True,
            )
        )

    def context(self, source: int, target: int) -> frozenset[str]:
        """The stems around ``target``'s name in ``source`` (empty when it does not link)."""
        return self.contexts.get((source, target), frozenset())

    @cached_property
    def _stored_overlaps(
        self,
    ) -> Callable[[int, Sequence[int], frozenset[str]], np.ndarray] | None:
        """The contexts' own :meth:`ContextOverlaps.overlaps` (a protocol check per query
        costs more than the look-up)."""
        return self.contexts.overlaps if isinstance(self.contexts, ContextOverlaps) else None

    def context_overlaps(
        self, source: int, targets: Sequence[int], question: frozenset[str]
    ) -> np.ndarray:
        """:func:`~rag_multihop.multihop.scoring.context_overlap` of ``question`` with the
        context of each link ``source`` → ``targets`` (zeros without question stems).

        >>> from rag_multihop import Corpus, Passage
        >>> corpus = Corpus([Passage("a", "Rope was directed by Alfred Hitchcock.", "Rope"),
        ...                  Passage("b", "Alfred Hitchcock was born in London.",
        ...                          "Alfred Hitchcock")])
        >>> links = LinkGraph.build(corpus, TitleIndex([p.title for p in corpus]))
        >>> links.context_overlaps(0, [1], frozenset({"direc", "born"})).tolist()
        [0.5]
        """
        if not question:
            return np.zeros(len(targets))
        if self._stored_overlaps is not None:
            return self._stored_overlaps(source, targets, question)
        return np.array([context_overlap(question, self.context(source, t)) for t in targets])


def passage_links(
    row: int, text: str, titles: TitleIndex, *, window: int = DEFAULT_WINDOW
) -> list[tuple[int, float, frozenset[str]]]:
    """The title links of one passage (row ``row``, text ``text``): ``(target, weight,
    context stems)`` by ascending target, weights of repeated names summed and capped at 1.
    A pure function of the text and the title dictionary, so an index can recompute the
    links of the passages a new title touches (:mod:`rag_multihop.store`).

    >>> titles = TitleIndex(["Rope", "Alfred Hitchcock"])
    >>> [(c, w, sorted(stems)) for c, w, stems in passage_links(0, "Rope was directed by "
    ...  "Alfred Hitchcock.", titles)]
    [(1, 1.0, ['direc', 'rope'])]
    """
    tokens, links = passage_link_spans(row, text, titles)
    return [(c, w, span_context(tokens, spans, window)) for c, w, spans in links]


SPAN_COMPLETE = 1
"""Span flag: every passage the span's key names is one of its referents."""
SPAN_CLEAR = 2
"""Span flag: no other key found in the text overlaps the span."""
SPAN_SELF = 4
"""Span flag: the source passage itself is one of the span's referents (no link to it)."""


def passage_link_spans(
    row: int, text: str, titles: TitleIndex
) -> tuple[tuple[str, ...], list[tuple[int, float, list[tuple[int, int, int]]]]]:
    """:func:`passage_links` with each link's name spans ``(start, end, flags)`` (token
    ``[start, end)`` in the text's normalised tokens, returned first; ``flags`` of
    :data:`SPAN_COMPLETE`, :data:`SPAN_CLEAR`, :data:`SPAN_SELF`) instead of its context
    stems: what an index stores. The context is :func:`span_context` of the spans; the
    links sharing a span are its referents, so an index applies the deletion of some of
    them to the weights without the text (:mod:`rag_multihop.store.patch`).

    >>> tokens, links = passage_link_spans(0, "Rope is by Alfred Hitchcock.",
    ...                                    TitleIndex(["Rope", "Alfred Hitchcock"]))
    >>> links
    [(1, 1.0, [(3, 5, 3)])]
    """
    found, details = titles.matches(text)
    weights: dict[int, float] = {}
    spans: dict[int, list[tuple[int, int, int]]] = {}
    for mention, (complete, clear) in zip(found.mentions, details, strict=True):
        flags = (
            SPAN_COMPLETE * complete + SPAN_CLEAR * clear + SPAN_SELF * (row in mention.referents)
        )
        for c, weight in mention.referents.items():
            if c == row:
                continue
            weights[c] = weights.get(c, 0.0) + weight
            spans.setdefault(c, []).append((mention.start, mention.end, flags))
    return found.tokens, [(c, min(weights[c], 1.0), spans[c]) for c in sorted(weights)]


def span_context(
    tokens: Sequence[str], spans: Iterable[Sequence[int]], window: int = DEFAULT_WINDOW
) -> frozenset[str]:
    """The stems within ``window`` tokens either side of each span ``[start, end)`` of
    ``tokens`` (a link's context, :func:`passage_links`).

    >>> sorted(span_context(["rope", "was", "directed", "by", "alfred", "hitchcock"], [(4, 6)]))
    ['direc', 'rope']
    """
    return window_context(token_stems(tokens), spans, window)


def token_stems(tokens: Sequence[str]) -> tuple[str | None, ...]:
    """Each token's stem, ``None`` for a stopword or a number (what :func:`stems` keeps, by
    position: a reader computes it once per text and asks :func:`window_context` often).

    >>> token_stems(["directed", "by", "1998"])
    ('direc', None, None)
    """
    return tuple(
        None if token in STOPWORDS or token.isdigit() else token[:STEM_CHARS] for token in tokens
    )


def text_stems(text: str) -> tuple[str | None, ...]:
    """:func:`token_stems` of ``text``'s :func:`~rag_multihop.multihop.titles.title_tokens`,
    one memoised look-up per word (a reader of a persistent index computes it for each
    source a query follows a link from).

    >>> text_stems("Rope was directed by Alfred Hitchcock in 1948.")
    ('rope', None, 'direc', None, 'alfre', 'hitch', None, None)
    """
    found = map(_word_stem, title_words(text))
    return tuple(stem for kept, stem in found if kept)


@lru_cache(maxsize=1 << 18)
def _word_stem(word: str) -> tuple[bool, str | None]:
    """Whether ``word`` is a title token, and its stem as :func:`token_stems` gives it."""
    token = title_token(word)
    return (True, token_stems((token,))[0]) if token else (False, None)


def may_share_stems(text: str, stems: frozenset[str]) -> bool:
    """Whether a token of ``text`` may have one of ``stems`` as its :func:`text_stems`
    stem. ``False`` only when none can: an ASCII text without HTML entities has, as its
    tokens, its lower-cased words, so each stem is a substring of its lower case.

    >>> may_share_stems("Rope was directed by Alfred Hitchcock.", frozenset({"direc"}))
    True
    >>> may_share_stems("Rope was directed by Alfred Hitchcock.", frozenset({"born"}))
    False
    >>> may_share_stems("Caf&eacute; Rope", frozenset({"born"}))  # entities: not ruled out
    True
    """
    if not text.isascii() or "&" in text:
        return True
    lowered = text.lower()
    return any(stem in lowered for stem in stems)


def window_context(
    per_token: Sequence[str | None], spans: Iterable[Sequence[int]], window: int = DEFAULT_WINDOW
) -> frozenset[str]:
    """:func:`span_context` from :func:`token_stems`."""
    found: set[str | None] = set()
    for start, end, *_ in spans:
        found.update(per_token[max(0, start - window) : start])
        found.update(per_token[end : end + window])
    return frozenset(stem for stem in found if stem is not None)


DEFAULT_MAX_ENTITY_PASSAGES = 50


@dataclass(frozen=True, eq=False)
class SharedEntities:
    """Passages related by an entity both name (from an entity graph's mention edges).

    The evidence that ``a`` leads to ``c`` through a shared entity ``e`` is the entity's
    specificity (:func:`specificity` of the passages naming it); an entity named by more than
    ``max_passages`` passages is skipped (a hub relates everything to everything).

    Example:
        >>> from rag_multihop import Corpus, Passage
        >>> from rag_multihop.graph.build import build_entity_graph
        >>> corpus = Corpus([Passage("a", "Rex won in Lyon.", "A"),
        ...                  Passage("b", "Lyon is big.", "B"), Passage("c", "Nothing.", "C")])
        >>> shared = SharedEntities.from_graph(build_entity_graph(corpus))
        >>> {c: round(v, 2) for c, v in shared.related(0).items()}
        {1: 0.37}
    """

    mentions: sparse.csr_matrix
    passages_of: sparse.csr_matrix
    entity_specificity: np.ndarray
    hub: np.ndarray

    @classmethod
    def from_graph(
        cls, graph: EntityGraph, *, max_passages: int = DEFAULT_MAX_ENTITY_PASSAGES
    ) -> SharedEntities:
        """Index ``graph``'s passage-entity mentions."""
        max_passages = check_positive_int(max_passages, "max_passages")
        passages_of = graph.passages_of
        mentions = graph.mentions
        if mentions.nnz and not (mentions.data == 1.0).all():
            mentions = (mentions > 0).astype(np.float64).tocsr()
        counts = np.diff(passages_of.indptr)
        others = np.maximum(counts - 1, 0)
        return cls(
            mentions,
            passages_of,
            specificity(others, mentions.shape[0]),
            counts > max_passages,
        )

    def related(self, row: int) -> dict[int, float]:
        """Passages sharing a non-hub entity with passage ``row``, with the best specificity."""
        found: dict[int, float] = {}
        start, end = self.mentions.indptr[row], self.mentions.indptr[row + 1]
        for entity in self.mentions.indices[start:end]:
            if self.hub[entity]:
                continue
            value = float(self.entity_specificity[entity])
            first, last = self.passages_of.indptr[entity], self.passages_of.indptr[entity + 1]
            for other in self.passages_of.indices[first:last].tolist():
                if other != row and value > found.get(other, 0.0):
                    found[other] = value
        return found
