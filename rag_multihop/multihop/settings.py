"""The knobs of :class:`~rag_multihop.multihop.retriever.MultiHopRetriever`, validated once.

Example:
    >>> MultiHopSettings().first_hops
    5
    >>> MultiHopSettings(context_weight=2.0)
    Traceback (most recent call last):
    ...
    ValueError: context_weight must be in [0, 1], got 2.0
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_multihop.fusion.calibration import CALIBRATIONS
from rag_multihop.fusion.functions import FUSIONS
from rag_multihop.graph.settings import PPR_METHODS
from rag_multihop.multihop.links import DEFAULT_MAX_ENTITY_PASSAGES, DEFAULT_WINDOW
from rag_multihop.validation import check_choice, check_fraction, check_positive_int


@dataclass(frozen=True)
class MultiHopSettings:
    """Every knob of the multi-hop retriever, with its default.

    Attributes:
        candidates: dense candidates searched (FAISS top-K) before links and names add more.
        first_hops: the best candidates (by similarity + name) tried as the pair's first hop.
        pair: choose ranks 1-2 as the best (first hop, partner) pair; off: one greedy list.
        keep_first_stage: when neither a name nor a title link supports a query's best pair
            (the question names neither passage, the first hop does not name its partner),
            ranks 1-2 keep the first stage's order (the greedy list) instead of the pair.
        title_links: use title links (pair and fill); off: names, shared entities and
            similarity only.
        subjects: a passage whose text does not spell its title out is also known by the
            subjects read from its text (:mod:`~rag_multihop.multihop.subjects`), for the
            question's names, title links and the pair.
        residual: score a partner by its cosine with the question minus the first hop
            (:func:`~rag_multihop.multihop.scoring.residual_cosine`); a partner that neither
            a name nor a title link from the first hop supports is then taken by its plain
            cosine instead; off: plain cosine.
        specificity: weigh a link by its target's specificity (links to hubs count less).
        exclusive_mentions: two referents of one question mention never both count as named.
        entity_weight: weight of a passage sharing an entity with the first hop, times the
            entity's specificity, as pair evidence (0 switches it off). 0.5: the path
            passage → entity → passage is one walk step longer than a title link, and each
            step of the graph walk keeps half the mass (PPR damping 0.5).
        entity_max_passages: entities named by more passages are not followed (hubs).
        context_weight: weight of the link-context overlap with the question's other words.
        context_window: words either side of a name kept as the link's context.
        fill_depth: passages ranked by the fill (at least ``k``; fixed so that the top 5 of
            a ``k=20`` call equal a ``k=5`` call).
        graph_tail: fuse ranks 3+ with entity-graph PPR seeded by the pair and the question's
            entities (PIT calibration, Boltzmann fusion).
        graph_cap: graph candidates (besides the pair) that enter that fusion.
        graph_seed_passages: the pair passages (rank order) that seed the tail's walk.
        tail_calibration, tail_fusion: how the fill and the walk are fused
            (:data:`~rag_multihop.fusion.calibration.CALIBRATIONS`,
            :data:`~rag_multihop.fusion.functions.FUSIONS`; PIT and Boltzmann, as
            ``pit-boltzmann``).
        graph_entity_share: share of the tail walk's seed mass on the question's entities
            (the rest on the pair). 0.5, below the graph method's 0.75: the pair already
            holds the passages about the named entities, and the tail is there for their
            neighbours; 0.75 lowered R@5 on every tune half (by 0.2 to 0.4).
        tail_guard: ranks 3+ hold only passages the question or the pair supports (named by
            the question, among the first stage's best ``fill_depth``, linked from a pair
            passage and similar to the question, or reached by the walk with
            :data:`~rag_multihop.multihop.scoring.MIN_WALK_MASS`); each other rank goes to the
            first stage's next passage (:func:`~rag_multihop.multihop.scoring.guarded_order`);
            and when a pair passage is known by subjects read from its text, a walk that
            reaches no passage with that mass keeps out of the tail.
        second_hops: for each pair passage the question names (a comparison names both, a
            bridge question its first hop; two referents of one mention count once), its
            first title-linked passage in the fill besides the pair follows the pair at
            ranks 3-4, before the fill's other passages and the graph walk: each compared
            subject's second hop (each film's director) reaches the top 5 even where the
            graph cannot lift it (opaque ids, whose titles it cannot link), and a named first
            hop keeps its own link when the pair chose another partner.
        asked_relations: when the question asks a relation of a name (*X's father*, *the
            director of film X*; :func:`~rag_multihop.multihop.relations.asked_relations`),
            no link counts toward X's passage in the pair: the answer is what X's passage
            names, and a passage naming X (X's son) is its neighbour, not the relation.
        lexical_weight: weight of the BM25 score, scaled by the query's best, in every
            candidate's base score (0, the default, switches it off): in chunks and files
            whose titles do not name them, a question's names are found in the text alone.
            Off by default: at 0.25 it raised every tune half but 2Wiki titled's R@5 (HotpotQA-500
            chunked R@2 / R@5 49.4 / 68.0 → 52.6 / 71.8, MuSiQue 57.5 / 75.7 → 61.2 / 76.0,
            2Wiki titled 80.3 / 98.3 → 80.5 / 97.8) and turned a demo chat's pair for one
            question to another wrong partner (docs/benchmarks.md).
        ppr: how the walk is computed (:data:`~rag_multihop.graph.settings.PPR_METHODS`);
            the local push by default: the same R@2 / R@5 as power iteration on the tune
            halves, two to three times faster.
    """

    candidates: int = 50
    first_hops: int = 5
    pair: bool = True
    keep_first_stage: bool = True
    title_links: bool = True
    subjects: bool = True
    residual: bool = True
    specificity: bool = True
    exclusive_mentions: bool = True
    entity_weight: float = 0.5
    entity_max_passages: int = DEFAULT_MAX_ENTITY_PASSAGES
    context_weight: float = 0.2
    context_window: int = DEFAULT_WINDOW
    fill_depth: int = 20
    graph_tail: bool = True
    graph_cap: int = 10
    graph_seed_passages: int = 2
    tail_calibration: str = "pit"
    tail_fusion: str = "boltzmann"
    graph_entity_share: float = 0.5
    ppr: str = "push"
    tail_guard: bool = True
    second_hops: bool = True
    asked_relations: bool = True
    lexical_weight: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "candidates",
            "first_hops",
            "context_window",
            "entity_max_passages",
            "fill_depth",
            "graph_cap",
            "graph_seed_passages",
        ):
            check_positive_int(getattr(self, name), name)
        for name in (
            "pair",
            "keep_first_stage",
            "title_links",
            "subjects",
            "residual",
            "specificity",
            "exclusive_mentions",
            "tail_guard",
            "second_hops",
            "asked_relations",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.graph_tail, bool):
            raise ValueError(f"graph_tail must be True or False, got {self.graph_tail!r}")
        check_fraction(self.context_weight, "context_weight")
        check_fraction(self.entity_weight, "entity_weight")
        check_fraction(self.graph_entity_share, "graph_entity_share")
        check_fraction(self.lexical_weight, "lexical_weight")
        check_choice(self.ppr, "ppr", PPR_METHODS)
        check_choice(self.tail_calibration, "tail_calibration", CALIBRATIONS)
        check_choice(self.tail_fusion, "tail_fusion", FUSIONS)
