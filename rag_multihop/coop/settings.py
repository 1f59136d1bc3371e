"""CoopRAG's settings: frozen, validated objects used by the classes, adapters and bench.

- :class:`CoopSettings`: :class:`~rag_multihop.coop.pipeline.CoopRetriever` and
  :class:`~rag_multihop.coop.uar.UARRetriever` (depth, reader's top k, UAR mode, KeyExtract);
- :class:`RaLaSettings`: :class:`~rag_multihop.coop.rala.RaLaReranker` and its retriever;
- :class:`FineTuneSettings`: :func:`~rag_multihop.coop.finetune.fine_tune`.

Example:
    >>> RaLaSettings().scoring, RaLaSettings(scoring="gap-weighted", buckets=2).buckets
    ('maxsim', 2)
    >>> RaLaSettings(scoring="eq5")
    Traceback (most recent call last):
    ...
    ValueError: scoring must be one of ['gap-weighted', 'layer-gap', 'maxsim'], got 'eq5'
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_multihop.coop.codecs import CODEC_NAMES, DEFAULT_CODEC
from rag_multihop.validation import check_choice, check_int, check_number, check_positive_int

SCORING_NAMES = ("maxsim", "gap-weighted", "layer-gap")
"""RaLa's scorings (:data:`rag_multihop.coop.rala.SCORINGS` holds the functions)."""

POOLING_NAMES = ("mean", "cls")

TOKEN_WEIGHTINGS = ("pool-idf", "uniform")
"""How MaxSim averages over query tokens: weighted by rarity among the candidates, or evenly."""

DEFAULT_CANDIDATES = 100
"""K, the first-stage depth RaLa reranks (the paper reranks a top-100)."""

DEFAULT_FIRST_STAGE_MARGIN = 0.02
"""RaLa's score lead (MaxSim, a mean cosine) needed to take a rank from the first stage."""

UAR_MODES = ("concatenate", "sub-questions")
"""How UAR searches: the unrolled question as one text, or one search per sub-question."""


@dataclass(frozen=True)
class CoopSettings:
    """Knobs of :class:`~rag_multihop.coop.pipeline.CoopRetriever`.

    Attributes:
        candidates: K, the first-stage depth that RaLa reranks (100, the paper's).
        top_k: passages the reader and KeyExtract see (5).
        uar_mode: ``"concatenate"`` (the paper) or ``"sub-questions"`` (PIT-fused searches);
            see :data:`UAR_MODES`.
        keyextract_rounds: KeyExtract's round budget; 0 turns it off.

    >>> CoopSettings(uar_mode="each")
    Traceback (most recent call last):
    ...
    ValueError: uar_mode must be one of ['concatenate', 'sub-questions'], got 'each'
    """

    candidates: int = DEFAULT_CANDIDATES
    top_k: int = 5
    uar_mode: str = "concatenate"
    keyextract_rounds: int = 0

    def __post_init__(self) -> None:
        check_positive_int(self.candidates, "candidates")
        check_positive_int(self.top_k, "top_k")
        check_int(self.keyextract_rounds, "keyextract_rounds", low=0)
        check_choice(self.uar_mode, "uar_mode", UAR_MODES)


@dataclass(frozen=True)
class RaLaSettings:
    """Knobs of :class:`~rag_multihop.coop.rala.RaLaReranker`.

    Attributes:
        scoring: ``"maxsim"`` (late interaction on the last layer, no weight; the default,
            see docs/coop.md for the measurement), ``"gap-weighted"`` (Eq. 4: MaxSim times
            the gap-aware weight) or ``"layer-gap"`` (Eq. 3: MaxSim over per-token gaps).
        layer: the hidden state RaLa scores on; ``None`` is the encoder's last layer.
        buckets: premature candidate layers, one drawn from each of this many contiguous
            buckets of the layers below ``layer`` (the paper uses 2 to 4).
        candidate_layers: explicit premature layers (hidden-state indices below ``layer``);
            overrides ``buckets``.
        seed: seeds the draw of one layer per bucket.
        pooling: the pooled vector of the gap weight, ``"mean"`` or ``"cls"``; ``None`` is
            the encoder's own pooling (the paper's [CLS] for a CLS-pooled encoder).
        token_weighting: ``"pool-idf"`` (default) weighs each query token by its inverse
            document frequency among the candidates being reranked, so tokens every candidate
            has (``[CLS]``, "the", "?") stop flattening the scores; ``"uniform"`` is the
            paper's plain mean.
        drop_punctuation: drop passage tokens that are only punctuation (the paper does).
        candidates: K, how many first-stage candidates a RaLa retriever reranks.
        codec: how a store built by the reranker packs its token vectors, one of
            :data:`~rag_multihop.coop.codecs.CODEC_NAMES` (default ``"float16"``;
            ``"residual-2bit"`` is 7× smaller at a small recall cost, docs/coop.md).
        first_stage_margin: RaLa takes a rank from the first stage only by this much: at
            each rank the first stage's best remaining candidate keeps it unless another
            remaining candidate's RaLa score is at least this much higher (then the highest
            takes it). Where the token-level contrast is weak, the first stage's order stays
            (signal ``first_stage``); 0 is the plain RaLa order. Chosen on 2Wiki's tune halves
            (docs/benchmarks.md, corpus views).
    """

    scoring: str = "maxsim"
    layer: int | None = None
    buckets: int = 3
    candidate_layers: tuple[int, ...] | None = None
    seed: int = 0
    pooling: str | None = None
    token_weighting: str = "pool-idf"
    drop_punctuation: bool = True
    candidates: int = DEFAULT_CANDIDATES
    codec: str = DEFAULT_CODEC
    first_stage_margin: float = DEFAULT_FIRST_STAGE_MARGIN

    def __post_init__(self) -> None:
        check_choice(self.scoring, "scoring", SCORING_NAMES)
        check_choice(self.codec, "codec", CODEC_NAMES)
        check_number(self.first_stage_margin, "first_stage_margin", low=0.0)
        if self.layer is not None:
            check_int(self.layer, "layer", low=1)
        check_int(self.buckets, "buckets", low=1, high=64)
        if self.candidate_layers is not None:
            layers = tuple(self.candidate_layers)
            if not layers:
                raise ValueError("candidate_layers must name at least one layer, or be None")
            for value in layers:
                check_int(value, "candidate_layers entry", low=0)
            if len(set(layers)) != len(layers):
                raise ValueError(f"candidate_layers must not repeat a layer, got {layers!r}")
            if self.layer is not None and max(layers) >= self.layer:
                raise ValueError(
                    f"candidate_layers must lie below layer {self.layer}, got {layers!r}"
                )
            object.__setattr__(self, "candidate_layers", layers)
        check_int(self.seed, "seed", low=0)
        if self.pooling is not None:
            check_choice(self.pooling, "pooling", POOLING_NAMES)
        check_choice(self.token_weighting, "token_weighting", TOKEN_WEIGHTINGS)
        if not isinstance(self.drop_punctuation, bool):
            raise ValueError(
                f"drop_punctuation must be True or False, got {self.drop_punctuation!r}"
            )
        check_positive_int(self.candidates, "candidates")


WEIGHTINGS = ("hops", "uniform")
"""Per-question loss weights of the retriever fine-tuning: proportional to the question's
sub-question count (without an LLM: its number of gold passages, one per hop), or equal."""


@dataclass(frozen=True)
class FineTuneSettings:
    """Knobs of :func:`~rag_multihop.coop.finetune.fine_tune` (CoopRAG §3.6).

    Attributes:
        epochs: passes over the training triples.
        batch_size: triples per step; each query sees the batch's other positives and
            hard negatives as in-batch negatives (the paper: 40).
        learning_rate: AdamW's step size.
        temperature: InfoNCE's τ (the paper: 0.05).
        weighting: ``"hops"`` (weight ∝ sub-question count, the paper's difficulty weight;
            without an LLM the number of gold passages stands for it) or ``"uniform"``.
        max_length: tokens per text while training (passages are cut there).
        seed: seeds the batch order.
        threads: torch intra-op threads while training.
    """

    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 5e-5
    temperature: float = 0.05
    weighting: str = "hops"
    max_length: int = 128
    seed: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        check_int(self.epochs, "epochs", low=1, high=100)
        check_int(self.batch_size, "batch_size", low=2)
        check_number(self.learning_rate, "learning_rate", low=0.0, high=1.0, low_open=True)
        check_number(self.temperature, "temperature", low=0.0, high=10.0, low_open=True)
        check_choice(self.weighting, "weighting", WEIGHTINGS)
        check_int(self.max_length, "max_length", low=8)
        check_int(self.seed, "seed", low=0)
        check_positive_int(self.threads, "threads")
