"""What :class:`~rag_multihop.multihop.retriever.MultiHopRetriever` builds at index time.

Pure functions over the corpus (and its entity graph), one structure each, so that an index
can build them once, persist them and hand them back to the retriever:

- :func:`passage_names`: each passage's title and, when its text does not spell the title
  out, the subjects read from its text (:mod:`~rag_multihop.multihop.subjects`);
- :func:`title_index`: those names, to find the passages a text names;
- :func:`link_graph`: passage → passage title links, their specificity and contexts;
- :func:`shared_entities`: passages related by an entity both name (from the entity graph);
- :func:`tail_walker`: the graph retriever of the tail (PPR over the entity graph);
- :func:`build_structures` builds whichever of them the settings use, into
  :class:`MultiHopStructures`.

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> corpus = Corpus([Passage("a", "Rex Moll met Bea Lind in Lyon.", "Rex Moll"),
    ...                  Passage("b", "Bea Lind sings.", "Bea Lind")])
    >>> built = build_structures(corpus, MultiHopSettings())
    >>> built.links.n_links, built.shared is not None, built.walker is not None
    (1, True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_multihop.corpus import Corpus
from rag_multihop.graph.build import EntityGraph, build_entity_graph
from rag_multihop.graph.retriever import GraphRetriever
from rag_multihop.graph.settings import GraphSettings
from rag_multihop.multihop.links import LinkGraph, SharedEntities
from rag_multihop.multihop.settings import MultiHopSettings
from rag_multihop.multihop.subjects import corpus_names
from rag_multihop.multihop.titles import TitleIndex


def passage_names(corpus: Corpus, settings: MultiHopSettings) -> list[tuple[str, ...]]:
    """Per passage, the names it is known by: its title, plus (with ``settings.subjects``)
    the subjects read from its text when the text does not spell the title out
    (:func:`~rag_multihop.multihop.subjects.passage_names`)."""
    if not settings.subjects:
        return [(p.title,) for p in corpus]
    return corpus_names(list(corpus))


def title_index(names: Sequence[Sequence[str]]) -> TitleIndex:
    """The title index over every passage's names (:func:`passage_names`)."""
    return TitleIndex(names)


def link_graph(corpus: Corpus, titles: TitleIndex, settings: MultiHopSettings) -> LinkGraph:
    """Every title of ``titles`` named in every passage's text (``settings.context_window``
    words either side kept as the link's context)."""
    return LinkGraph.build(corpus, titles, window=settings.context_window)


def shared_entities(graph: EntityGraph, settings: MultiHopSettings) -> SharedEntities:
    """The passages sharing an entity (entities named by more than
    ``settings.entity_max_passages`` passages are hubs and not followed)."""
    return SharedEntities.from_graph(graph, max_passages=settings.entity_max_passages)


def tail_walker(
    graph: EntityGraph, corpus: Corpus, settings: MultiHopSettings, *, check_corpus: bool = True
) -> GraphRetriever:
    """The tail's walk: PPR over ``graph`` seeded by the pair's first
    ``graph_seed_passages`` passages and the question's entities (``check_corpus=False``:
    the graph is known to be ``corpus``'s, e.g. read from an index)."""
    return GraphRetriever(
        graph,
        corpus,
        settings=GraphSettings(
            seed_top_n=settings.graph_seed_passages,
            entity_share=settings.graph_entity_share,
            ppr=settings.ppr,
        ),
        check_corpus=check_corpus,
    )


@dataclass(frozen=True, eq=False)
class MultiHopStructures:
    """The index-time structures of one corpus (``graph``, ``shared`` and ``walker`` are
    ``None`` when the settings do not use them)."""

    names: tuple[tuple[str, ...], ...]
    titles: TitleIndex
    links: LinkGraph
    graph: EntityGraph | None
    shared: SharedEntities | None
    walker: GraphRetriever | None


def build_structures(
    corpus: Corpus,
    settings: MultiHopSettings,
    *,
    graph: EntityGraph | None = None,
    titles: TitleIndex | None = None,
    links: LinkGraph | None = None,
) -> MultiHopStructures:
    """Everything ``settings`` use, built from ``corpus`` unless given (the entity graph is
    built only when the shared entities or the graph tail need it)."""
    names = tuple(passage_names(corpus, settings))
    titles = titles if titles is not None else title_index(names)
    if len(titles) != len(corpus):
        raise ValueError(f"the title index has {len(titles)} titles for {len(corpus)} passages")
    links = links if links is not None else link_graph(corpus, titles, settings)
    if graph is None and (settings.graph_tail or settings.entity_weight > 0):
        graph = build_entity_graph(corpus)
    shared = (
        shared_entities(graph, settings)
        if graph is not None and settings.entity_weight > 0
        else None
    )
    walker = (
        tail_walker(graph, corpus, settings) if graph is not None and settings.graph_tail else None
    )
    return MultiHopStructures(names, titles, links, graph, shared, walker)
