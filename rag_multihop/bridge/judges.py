"""Judges: score each pool candidate given the question, the bridge and its entities.

A :class:`Judge` returns one score in [0, 1] per candidate, either as a plain sequence of
floats or as a :class:`Judgement` that also carries the LLM usage and fallback count. The
pipeline checks the scores (:func:`check_judgement`): a wrong count, NaN or a value outside
[0, 1] is a ``ValueError`` naming the judge, never clipped silently. Only the order of the
scores matters downstream, since they are fused by percentile rank.

- :class:`LLMJudge` (BridgeRAG): the tripartite prompt
  (:data:`~rag_multihop.llm.prompts.TRIPARTITE_JUDGE`) per candidate, all candidates of a
  query concurrently (bounded by the client's ``max_concurrency``), bridge and candidate
  truncated to 700 characters; the 0-10 reply is divided by 10. A reply still unusable after
  the client's repair attempt (malformed, empty, out of range, refused) gets the neutral
  score :data:`NEUTRAL_SCORE` and is counted in ``Judgement.fallbacks`` (``on_error="raise"``
  raises instead).
- :class:`EmbeddingJudge` (LLM-free): the weighted mean (:class:`JudgeWeights`) of the
  candidate's cosine similarity to the question and to the bridge and of two title-mention
  signals (:mod:`~rag_multihop.bridge.features`): its title named in the bridge, or in the
  question.
- :class:`AssociationJudge` (LLM-free, needs a fitted AAR model): the same mean with the
  AAR reranker's scores in place of the cosines.

Example:
    >>> import numpy as np
    >>> from rag_multihop import Passage, Query
    >>> vectors = PassageVectors(ids=["b", "c1", "c2"], vectors=np.array(
    ...     [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]))
    >>> judge = EmbeddingJudge(vectors)
    >>> bridge = Passage("b", "Polish Wedding was directed by Theresa Connelly.")
    >>> candidates = [Passage("c1", "x", title="Theresa Connelly"), Passage("c2", "y", title="Z")]
    >>> question = Query("q", embedding=np.array([0.0, 1.0, 0.0]))
    >>> scores = judge.score(question, bridge, [], candidates)
    >>> [round(float(s), 2) for s in scores]
    [0.63, 0.17]
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from rag_multihop.bridge.features import names_mentioned, to_unit
from rag_multihop.bridge.queries import check_on_error
from rag_multihop.multihop.subjects import names_with_aliases, passage_names
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_number, check_positive_int, loggable
from rag_multihop.vectors import PassageVectors

if TYPE_CHECKING:
    from rag_multihop.association.reranker import AssociationReranker
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.client import JSONReply, LLMClient
    from rag_multihop.llm.prompts import JudgeScore

logger = logging.getLogger(__name__)

NEUTRAL_SCORE = 0.5
"""The score of a candidate whose LLM judgement was unusable (``on_error="neutral"``)."""


@dataclass(frozen=True)
class Judgement:
    """Scores in [0, 1], one per candidate, with what producing them cost."""

    scores: np.ndarray
    account: LLMAccount | None = None
    fallbacks: int = 0


@runtime_checkable
class Judge(Protocol):
    """Scores candidates for the missing hop; see the module docstring."""

    def score(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> Judgement | Sequence[float] | np.ndarray: ...

    async def ascore(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> Judgement | Sequence[float] | np.ndarray: ...


def check_judgement(
    result: Judgement | Sequence[float] | np.ndarray, n: int, judge: object
) -> Judgement:
    """``result`` as a :class:`Judgement` of ``n`` scores in [0, 1], or ``ValueError``.

    >>> check_judgement([0.2, 1.5], 2, "my-judge")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: judge my-judge returned scores outside [0, 1] at positions [1]: [1.5]; ...
    """
    name = judge if isinstance(judge, str) else type(judge).__name__
    raw = result.scores if isinstance(result, Judgement) else result
    judgement = result if isinstance(result, Judgement) else Judgement(np.zeros(0))
    if isinstance(raw, np.ndarray):
        values = raw.ravel().tolist()
    elif isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        values = list(raw)
    else:
        raise ValueError(
            f"judge {name} returned {loggable(raw, 120)}, not a list of scores; a judge must "
            "return one score in [0, 1] per candidate"
        )
    wrong = [
        (i, v)
        for i, v in enumerate(values)
        if isinstance(v, bool) or not isinstance(v, int | float | np.number)
    ]
    if wrong:
        shown = ", ".join(f"{i}: {loggable(v, 60)}" for i, v in wrong[:5])
        raise ValueError(
            f"judge {name} returned non-numeric scores at (position: value) {shown}; a judge "
            "must return one score in [0, 1] per candidate"
        )
    scores = np.asarray(values, dtype=np.float64).reshape(np.shape(raw))
    if scores.ndim != 1 or scores.size != n:
        raise ValueError(
            f"judge {name} returned {scores.size} score(s) of shape {scores.shape} for {n} "
            "candidate(s); a judge must return one score in [0, 1] per candidate"
        )
    bad = np.flatnonzero(~np.isfinite(scores) | (scores < 0.0) | (scores > 1.0))
    if bad.size:
        raise ValueError(
            f"judge {name} returned scores outside [0, 1] at positions {bad[:5].tolist()}: "
            f"{scores[bad[:5]].tolist()}; a judge must return one score in [0, 1] per candidate"
        )
    return Judgement(scores, judgement.account, judgement.fallbacks)


@dataclass(frozen=True)
class JudgeWeights:
    """Weights of the LLM-free judge signals; the judge score is their weighted mean.

    Attributes:
        question: similarity of the candidate to the question (cosine or AAR score).
        bridge: similarity of the candidate to the bridge passage.
        bridge_mention: the candidate's title is named in the bridge (see
            :mod:`~rag_multihop.bridge.features`).
        question_mention: the candidate's title is named in the question.

    >>> JudgeWeights(question=-1)
    Traceback (most recent call last):
    ...
    ValueError: JudgeWeights.question must be a finite number >= 0, got -1
    """

    question: float = 1.0
    bridge: float = 0.0
    bridge_mention: float = 1.0
    question_mention: float = 1.0

    def __post_init__(self) -> None:
        values = self.as_tuple()
        for name, value in zip(
            ("question", "bridge", "bridge_mention", "question_mention"), values, strict=True
        ):
            check_number(value, f"JudgeWeights.{name}", low=0.0)
        if sum(values) == 0:
            raise ValueError("JudgeWeights must not all be 0; give at least one positive weight")

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.question, self.bridge, self.bridge_mention, self.question_mention)


def combine_signals(
    weights: JudgeWeights,
    question: np.ndarray,
    bridge: np.ndarray,
    bridge_mention: np.ndarray,
    question_mention: np.ndarray,
) -> np.ndarray:
    """The weighted mean of the four signals (each in [0, 1]), per candidate.

    >>> combine_signals(JudgeWeights(), np.array([0.8]), np.array([0.1]), np.array([1.0]),
    ...                 np.array([0.0])).round(3)
    array([0.6])
    """
    stacked = np.stack([question, bridge, bridge_mention, question_mention])
    w = np.asarray(weights.as_tuple(), dtype=np.float64)
    return np.asarray((w @ stacked) / w.sum(), dtype=np.float64)


def _mention_signals(
    query: Query, bridge: Passage, candidates: Sequence[Passage]
) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate named (by its title or a subject read from its text) in the bridge,
    and in the question; a name that is a part of one of the bridge's names does not count."""
    names = [names_with_aliases(p) for p in candidates]
    own = passage_names(bridge)
    return (
        names_mentioned(names, bridge.text, part_of=own),
        names_mentioned(names, query.text, part_of=own),
    )


def name_links(query: Query, bridge: Passage, candidates: Sequence[Passage]) -> np.ndarray:
    """Whether a name connects each candidate to hop 1: the bridge or the question names it
    (the LLM-free judges' name signals; see :func:`BridgeRetriever.run
    <rag_multihop.bridge.pipeline.BridgeRetriever.run>`'s kept first stage).

    >>> bridge = Passage("b", "Polish Wedding was directed by Theresa Connelly.", "doc-1")
    >>> name_links(Query("Who directed Polish Wedding?"), bridge, [
    ...     Passage("c", "Theresa Connelly is a director.", "doc-2"),
    ...     Passage("d", "A wedding is a ceremony.", "doc-3")]).tolist()
    [True, False]
    """
    in_bridge, in_question = _mention_signals(query, bridge, candidates)
    return np.asarray((in_bridge > 0) | (in_question > 0), dtype=bool)


class EmbeddingJudge:
    """LLM-free: cosine similarity and title mentions, combined by :class:`JudgeWeights`.

    The default weights (question similarity, mention in the bridge, mention in the
    question; no bridge similarity) are the best of the combinations measured in
    ``docs/bridge.md``: a candidate similar to the bridge is mostly another page *like* the
    bridge (another film, another town), not the page it leads to.

    Args:
        vectors: passage vectors by id (and the encoder for unknown passages and queries).
        weights: the :class:`JudgeWeights`.
    """

    def __init__(self, vectors: PassageVectors, *, weights: JudgeWeights | None = None) -> None:
        self.vectors = vectors
        self.weights = weights if weights is not None else JudgeWeights()

    def score(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        matrix = self.vectors.passages([bridge, *candidates])
        cos_q = to_unit(matrix[1:] @ self.vectors.query(query))
        cos_b = to_unit(matrix[1:] @ matrix[0])
        return combine_signals(
            self.weights, cos_q, cos_b, *_mention_signals(query, bridge, candidates)
        )

    async def ascore(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> np.ndarray:
        return await asyncio.to_thread(self.score, query, bridge, entities, candidates)

    def links(self, query: Query, bridge: Passage, candidates: Sequence[Passage]) -> np.ndarray:
        """:func:`name_links`: the name signals this judge reads (the kept first stage's test)."""
        return name_links(query, bridge, candidates)


class AssociationJudge:
    """LLM-free with a fitted AAR model: AAR scores in place of cosines, plus mentions.

    The similarity signals are the AAR reranker's scores ``(1 − λ)·cos + λ·association``
    of the candidate for the question and for the bridge (as a query), mapped to [0, 1]:
    association learns which passages are *used together*, so it can lift the page the
    question leads to above pages merely like it. The bridge's vector comes from the model's
    stored vectors, else ``vectors``, else the reranker's encoder.

    Args:
        reranker: a fitted :class:`~rag_multihop.association.reranker.AssociationReranker`
            (its ``lambda_`` and ``mode`` apply).
        weights: the :class:`JudgeWeights` (default: the same as :class:`EmbeddingJudge`;
            giving the bridge signal weight 0.5 or 1 changed R@5 by less than 0.5 in
            ``docs/bridge.md``).
        vectors: vectors for passages the model does not store (optional).
    """

    def __init__(
        self,
        reranker: AssociationReranker,
        *,
        weights: JudgeWeights | None = None,
        vectors: PassageVectors | None = None,
    ) -> None:
        if not reranker.is_fitted:
            raise ValueError("AssociationJudge needs a fitted AssociationReranker (fit or load)")
        self.reranker = reranker
        self.weights = weights if weights is not None else JudgeWeights()
        self.vectors = vectors

    def _bridge_query(self, bridge: Passage) -> Query:
        text = bridge.embedding_text or bridge.id
        try:
            return Query(text, embedding=self.reranker.passage_vectors([bridge.id])[0])
        except KeyError:
            pass
        if self.vectors is not None:
            return Query(text, embedding=self.vectors.passages([bridge])[0])
        return Query(text)  # the reranker's encoder embeds it

    def score(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        wrapped = [Candidate(p, 0.0) for p in candidates]
        extra = None
        if self.vectors is not None:
            unknown = [p for p in candidates if not self.reranker.stores(p.id)]
            if unknown:
                matrix = self.vectors.passages(unknown)
                extra = {p.id: row for p, row in zip(unknown, matrix, strict=True)}
        for_q = to_unit(self.reranker.score(query, wrapped, vectors=extra).score)
        for_b = to_unit(
            self.reranker.score(self._bridge_query(bridge), wrapped, vectors=extra).score
        )
        return combine_signals(
            self.weights, for_q, for_b, *_mention_signals(query, bridge, candidates)
        )

    async def ascore(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> np.ndarray:
        return await asyncio.to_thread(self.score, query, bridge, entities, candidates)

    def links(self, query: Query, bridge: Passage, candidates: Sequence[Passage]) -> np.ndarray:
        """:func:`name_links`: the name signals this judge reads (the kept first stage's test)."""
        return name_links(query, bridge, candidates)


class LLMJudge:
    """BridgeRAG's tripartite LLM judge; candidates of one query are judged concurrently.

    Args:
        client: the :class:`~rag_multihop.llm.client.LLMClient` to call.
        max_chars: bridge and candidate truncated to this many characters (700 in the paper).
        concurrency: candidates judged at once (default: the client's ``max_concurrency``).
        on_error: ``"neutral"`` (score :data:`NEUTRAL_SCORE`, counted) or ``"raise"``.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        max_chars: int = 700,
        concurrency: int | None = None,
        on_error: Literal["neutral", "raise"] = "neutral",
    ) -> None:
        self.client = client
        self.max_chars = check_positive_int(max_chars, "max_chars")
        self.concurrency = (
            None if concurrency is None else check_positive_int(concurrency, "concurrency")
        )
        self.on_error = check_on_error(on_error)

    async def ascore(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> Judgement:
        from rag_multihop.llm.client import MISSING
        from rag_multihop.llm.prompts import JudgeScore, format_tripartite_judge

        e1, e2 = (*entities, "", "")[:2]
        default = JudgeScore(score=10.0 * NEUTRAL_SCORE) if self.on_error == "neutral" else MISSING

        async def judge_one(candidate: Passage) -> JSONReply[JudgeScore]:
            messages = format_tripartite_judge(
                query.text, bridge, e1, e2, candidate, max_chars=self.max_chars
            )
            return await self.client.acomplete_json(messages, JudgeScore, default=default)

        replies = await self.client.map_async(judge_one, candidates, limit=self.concurrency)
        fallbacks = sum(r.fallback for r in replies)
        if fallbacks:
            logger.warning(
                "%d of %d judge replies unusable; scored %.1f",
                fallbacks,
                len(replies),
                NEUTRAL_SCORE,
            )
        scores = np.array([r.value.unit for r in replies], dtype=np.float64)
        account = sum((r.account for r in replies), start=_zero_account())
        return Judgement(scores, account, fallbacks)

    def score(
        self,
        query: Query,
        bridge: Passage,
        entities: Sequence[str],
        candidates: Sequence[Passage],
    ) -> Judgement:
        """:meth:`ascore` on the client's event loop (not from inside a running loop)."""
        return self.client.run(self.ascore(query, bridge, entities, candidates))


def _zero_account() -> LLMAccount:
    from rag_multihop.llm.accounting import LLMAccount

    return LLMAccount()


def judge_name(judge: object) -> str:
    """A short name for reports: the judge's ``name`` attribute when it has one, else
    ``"llm"``, ``"embedding"``, ``"association"`` or the class name."""
    named = getattr(judge, "name", None)
    if isinstance(named, str):
        return named
    names = {LLMJudge: "llm", EmbeddingJudge: "embedding", AssociationJudge: "association"}
    return names.get(type(judge), type(judge).__name__)
