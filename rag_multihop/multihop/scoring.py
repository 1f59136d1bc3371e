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

Example:
    >>> residual_cosine(np.array([0.6, 0.6]), 0.8, np.array([0.9, 0.2])).round(3).tolist()
    [-0.2, 0.733]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
    linked = np.asarray(weights) > 0
    scores = np.asarray(weights) * target_specificity + context_weight * np.asarray(overlaps)
    return np.where(linked, scores, 0.0)


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
