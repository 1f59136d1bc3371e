"""The scores of the multi-hop retriever as pure functions over arrays.

- :func:`residual_cosine`: how well a candidate answers what the question asks *beyond* a
  first-hop passage ``a``: its cosine with the question vector once ``a``'s direction is
  projected out. A candidate that is merely like ``a`` (another film, a namesake) loses what
  it shared with ``a``; the page ``a`` leads to keeps what it shares with the rest of the
  question.
- :func:`link_scores`: the evidence that ``a`` leads to each candidate: the title-link
  weight times the target's specificity, plus how much of the question's remaining words
  the link's context holds.
- :func:`pair_matrix`: the score of every pair (first hop ``a``, partner ``c``).
- :func:`lexical_evidence`: BM25 scores scaled by the query's best match.
- :func:`guarded_order`: the tail with the ranks nothing supports given to the first stage.

Example:
    >>> residual_cosine(np.array([0.6, 0.6]), 0.8, np.array([0.9, 0.2])).round(3).tolist()
    [-0.2, 0.733]
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

MIN_WALK_MASS = 0.02
"""Least Personalized PageRank mass at which the tail's walk alone supports a passage (2% of
the walk's mass; reached through a hub or many steps, a passage holds less)."""

MIN_RESIDUAL_NORM = 1e-3
"""Floor of ``sqrt(1 - cos(q, a)^2)``: a first hop identical to the question leaves no residual."""


def residual_cosine(cos_qc: np.ndarray, cos_qa: float, cos_ac: np.ndarray) -> np.ndarray:
    """``cos(q - (q·a)a, c)`` for unit vectors q, a and each candidate c.

    ``(cos(q, c) - cos(q, a)·cos(a, c)) / sqrt(1 - cos(q, a)^2)``.
    """
    norm = max(float(np.sqrt(max(1.0 - cos_qa * cos_qa, 0.0))), MIN_RESIDUAL_NORM)
    return (np.asarray(cos_qc, dtype=np.float64) - cos_qa * np.asarray(cos_ac)) / norm


def context_overlap(question: frozenset[str], context: frozenset[str]) -> float:
    """Share of the question's stems that the link context holds (0 without question stems).

    >>> context_overlap(frozenset({"direc", "born"}), frozenset({"direc", "film"}))
    0.5
    """
    return len(question & context) / len(question) if question else 0.0


def link_scores(
    weights: np.ndarray,
    target_specificity: np.ndarray,
    overlaps: np.ndarray,
    context_weight: float,
) -> np.ndarray:
    """``weight · specificity + context_weight · overlap`` for linked candidates, 0 for others.

    >>> link_scores(np.array([1.0, 0.0]), np.array([0.8, 1.0]), np.array([0.5, 1.0]), 0.2)
    array([0.9, 0. ])
    """
    weights = np.asarray(weights, dtype=np.float64)
    scores = weights * target_specificity + context_weight * np.asarray(overlaps)
    scores[~(weights > 0)] = 0.0
    return scores


def pair_matrix(
    first_base: np.ndarray,
    partner_named: np.ndarray,
    partner_evidence: np.ndarray,
    links: np.ndarray,
    same_mention: np.ndarray,
) -> np.ndarray:
    """Score of every pair ``(first hop i, partner j)``, shape ``(len(first_base), n)``.

    ``first_base[i] + partner_named[j] + partner_evidence[i, j] + links[i, j]``, where the
    partner's name bonus does not count when both passages are referents of one question
    mention (a name refers to one passage), ``partner_evidence`` is the partner's
    (residual) similarity and ``links`` the :func:`link_scores` of ``i`` → ``j``.

    >>> pair_matrix(np.array([1.8]), np.array([1.0, 0.0]), np.array([[0.3, 0.5]]),
    ...             np.array([[0.0, 1.0]]), np.array([[True, False]])).round(2).tolist()
    [[2.1, 3.3]]
    """
    named = np.where(same_mention, 0.0, np.asarray(partner_named)[None, :])
    return np.asarray(first_base)[:, None] + named + partner_evidence + links


def best_pair(scores: np.ndarray, first_rows: Sequence[int]) -> tuple[int, int, float]:
    """``(i, j, score)`` of the best pair in ``scores`` (``(firsts, n)``), never ``j`` equal to
    the candidate of first hop ``i`` (``first_rows[i]``); ties go to the earlier pair.

    >>> best_pair(np.array([[9.0, 1.0, 2.0]]), [0])
    (0, 2, 2.0)
    """
    masked = np.array(scores, dtype=np.float64, copy=True)
    masked[np.arange(len(first_rows)), np.asarray(first_rows)] = -np.inf
    flat = int(np.argmax(masked))
    i, j = divmod(flat, masked.shape[1])
    return i, j, float(masked[i, j])


def lexical_evidence(scores: np.ndarray) -> np.ndarray:
    """Lexical (BM25) scores scaled by the query's best to ``[0, 1]`` (all 0 when nothing
    matches): a word-for-word signal for passages whose title is not their name (chunks of a
    document, files), where a question's names are found in the text only.

    >>> lexical_evidence(np.array([0.0, 2.0, 8.0])).tolist()
    [0.0, 0.25, 1.0]
    """
    values = np.asarray(scores, dtype=np.float64)
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else np.zeros_like(values)


def guarded_order(
    ranked: Sequence[int], supported: Collection[int], fallback: Sequence[int], size: int
) -> list[tuple[int, bool]]:
    """Up to ``size`` rows: ``ranked`` where a row is ``supported``, and each rank held by an
    unsupported row given to the next row of ``fallback`` (the first stage's order) instead,
    and ranks left over (rows already placed) given to ``fallback`` too; the flag is ``True``
    for a row taken from ``fallback``. No row appears twice.

    >>> guarded_order([7, 8, 9], supported={7, 9}, fallback=[1, 9, 2], size=3)
    [(7, False), (1, True), (9, False)]
    """
    out: list[tuple[int, bool]] = []
    placed: set[int] = set()
    spare = iter(fallback)
    for row in ranked:
        if len(out) >= size:
            break
        if row in placed:
            continue
        if row in supported:
            out.append((row, False))
            placed.add(row)
            continue
        for other in spare:
            if other not in placed:
                out.append((other, True))
                placed.add(other)
                break
    for other in spare:
        if len(out) >= size:
            break
        if other not in placed:
            out.append((other, True))
            placed.add(other)
    return out
