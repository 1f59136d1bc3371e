"""RaLa's scores as pure functions over arrays (CoopRAG §3.4, Eq. 3 and Eq. 4).

Shapes: a query is ``(T, D)`` token vectors, a passage ``(S, D)``, both with unit rows (a
zero row, such as a dropped token, never wins a maximum against a real match). Layers are
hidden-state indices: 0 is the embedding output, ``n`` the last transformer layer.

- :func:`maxsim`: late interaction, the mean over query tokens of the best cosine over the
  passage tokens (ColBERT's MaxSim), on one layer; optionally a weighted mean, with
  :func:`pool_idf` weights (the query tokens' rarity among the candidates).
- :func:`gap_weights`: Eq. 4's gap-aware weight of each passage, from one pooled vector per
  layer: ``(cos(q_last, d_last) − min_l cos(q_last, d_l)) / 2`` over the premature candidate
  layers ``l``; the layer reaching the minimum is the premature layer of largest gap.
- :func:`layer_gap_maxsim`: Eq. 3, MaxSim over the per-token score gap
  ``max_l [cos(q_i^last, d_j^last) − cos(q_i^l, d_j^l)]``.
- :func:`candidate_layers`: the premature layers, one per bucket of the early layers.

Example:
    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> d = np.array([[1.0, 0.0], [0.6, 0.8]])
    >>> round(maxsim(q, d), 4)  # (max(1, .6) + max(0, .8)) / 2
    0.9
    >>> candidate_layers(6, buckets=3, seed=0)
    (1, 3, 4)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import numpy as np


def _check(query: np.ndarray, passages: Sequence[np.ndarray]) -> None:
    if query.ndim != 2 or len(query) == 0:
        raise ValueError(f"query tokens must be a non-empty (tokens, dim) array, got {query.shape}")
    for i, p in enumerate(passages):
        if p.ndim != 2 or len(p) == 0:
            raise ValueError(
                f"passage {i} tokens must be a non-empty (tokens, dim) array, got {p.shape}"
            )
        if p.shape[1] != query.shape[1]:
            raise ValueError(
                f"passage {i} tokens have dimension {p.shape[1]}, the query's have {query.shape[1]}"
            )


def _starts(passages: Sequence[np.ndarray]) -> np.ndarray:
    """Where each passage begins in the concatenation of all passages' tokens."""
    return np.concatenate([[0], np.cumsum([len(p) for p in passages])[:-1]]).astype(np.intp)


def token_similarities(query: np.ndarray, passages: Sequence[np.ndarray]) -> np.ndarray:
    """Cosines of every query token with every token of every passage, ``(T, S_total)``: the
    passages' tokens concatenated in order (one matrix product, no padding)."""
    _check(query, passages)
    stacked = np.concatenate([np.asarray(p, dtype=np.float32) for p in passages])
    return np.asarray(query, dtype=np.float32) @ stacked.T


def best_per_passage(similarities: np.ndarray, passages: Sequence[np.ndarray]) -> np.ndarray:
    """``(n, T)``: for each passage and query token, the best value over that passage's tokens."""
    return np.maximum.reduceat(similarities, _starts(passages), axis=1).T


def _mean_over_query(best: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """``(n, T)`` per-query-token scores averaged over tokens, uniformly or with ``weights``."""
    if weights is None:
        return best.mean(axis=1).astype(np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != best.shape[1:]:
        raise ValueError(f"query weights have shape {weights.shape}, expected ({best.shape[1]},)")
    if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError("query weights must be finite, non-negative and not all zero")
    return (best @ weights) / weights.sum()


def maxsim_batch(
    query: np.ndarray, passages: Sequence[np.ndarray], weights: np.ndarray | None = None
) -> np.ndarray:
    """:func:`maxsim` of one query against each passage, as a ``(n,)`` array; ``weights``
    (one per query token, e.g. :func:`pool_idf`) turn the mean into a weighted mean."""
    if not passages:
        return np.zeros(0, dtype=np.float64)
    best = best_per_passage(token_similarities(query, passages), passages)
    return _mean_over_query(best, weights)


def maxsim(query: np.ndarray, passage: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Late interaction: mean over query tokens of the best cosine over passage tokens."""
    return float(maxsim_batch(query, [passage], weights)[0])


def pool_idf(query_ids: np.ndarray, passage_ids: Sequence[np.ndarray]) -> np.ndarray:
    """Inverse document frequency of each query token within the candidate pool:
    ``log((n + 1) / (df + 0.5))`` where ``df`` counts the ``n`` passages whose token ids
    contain it. Always positive (``df <= n``): tokens every candidate has ([CLS], "the", the
    question's own topic) weigh little, tokens few candidates have weigh most.

    >>> pool_idf(np.array([101, 7, 9]), [np.array([101, 7]), np.array([101, 8])]).round(3)
    array([0.182, 0.693, 1.792])
    """
    query_ids = np.asarray(query_ids)
    df = np.zeros(len(query_ids))
    for ids in passage_ids:
        df += np.isin(query_ids, ids)
    return np.log((len(passage_ids) + 1) / (df + 0.5))


def gap_weights(
    query_pooled: np.ndarray, passage_pooled: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 4's gap-aware weight of each passage and the position of its premature layer.

    Args:
        query_pooled: ``(D,)`` unit vector of the query at the last layer.
        passage_pooled: ``(n, 1 + C, D)`` unit vectors of each passage at the last layer
            (position 0) and at the ``C`` premature candidate layers (positions 1..C).

    Returns:
        ``weights`` ``(n,)``: ``(cos(q, d_last) − min_c cos(q, d_c)) / 2``, in [−1, 1];
        ``premature`` ``(n,)``: the position (1..C) of the layer of largest gap.

    >>> q = np.array([1.0, 0.0])
    >>> d = np.array([[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]])
    >>> gap_weights(q, d)
    (array([0.5]), array([1]))
    """
    if passage_pooled.ndim != 3 or passage_pooled.shape[1] < 2:
        raise ValueError(
            "passage_pooled must be (passages, 1 + candidate layers, dim) with at least one "
            f"candidate layer, got shape {passage_pooled.shape}"
        )
    if query_pooled.shape != passage_pooled.shape[2:]:
        raise ValueError(
            f"query_pooled has shape {query_pooled.shape}, expected ({passage_pooled.shape[2]},)"
        )
    cosines = passage_pooled.astype(np.float64) @ query_pooled.astype(np.float64)  # (n, 1 + C)
    premature = 1 + cosines[:, 1:].argmin(axis=1)
    lowest = cosines[np.arange(len(cosines)), premature]
    return (cosines[:, 0] - lowest) / 2.0, premature


def layer_gap_maxsim(
    query_layers: np.ndarray,
    passages_layers: Sequence[np.ndarray],
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Eq. 3 for each passage: MaxSim over token-pair gaps between the last layer and the
    premature layer of largest gap.

    Args:
        query_layers: ``(1 + C, T, D)``: query tokens at the last layer, then at the ``C``
            candidate layers.
        passages_layers: per passage ``(1 + C, S, D)`` in the same layer order.
        weights: optional per-query-token weights of the mean (as in :func:`maxsim_batch`).

    >>> q = np.array([[[1.0, 0.0]], [[1.0, 0.0]]])       # last layer, one candidate layer
    >>> d = np.array([[[0.6, 0.8]], [[0.0, 1.0]]])
    >>> layer_gap_maxsim(q, [d]).round(4)  # 0.6 at the last layer minus 0.0 at the early one
    array([0.6])
    """
    if query_layers.ndim != 3 or len(query_layers) < 2:
        raise ValueError(
            "query_layers must be (1 + candidate layers, tokens, dim) with at least one "
            f"candidate layer, got shape {query_layers.shape}"
        )
    if not passages_layers:
        return np.zeros(0, dtype=np.float64)
    for i, p in enumerate(passages_layers):
        if p.ndim != 3 or len(p) != len(query_layers):
            raise ValueError(
                f"passage {i} layers have shape {p.shape}, "
                f"expected ({len(query_layers)}, tokens, dim)"
            )
    last_layer = [p[0] for p in passages_layers]
    last = token_similarities(query_layers[0], last_layer)
    gap = np.full(last.shape, -np.inf, dtype=np.float32)
    for c in range(1, len(query_layers)):
        early = token_similarities(query_layers[c], [p[c] for p in passages_layers])
        gap = np.maximum(gap, last - early)
    return _mean_over_query(best_per_passage(gap, last_layer), weights)


def candidate_layers(n_layers: int, *, buckets: int, seed: int = 0) -> tuple[int, ...]:
    """The premature candidate layers: the early hidden states ``0 .. n_layers − 1`` cut into
    ``buckets`` contiguous groups, one layer drawn from each with ``random.Random(seed)``
    (the paper draws at random; the seed makes runs repeatable).

    >>> candidate_layers(12, buckets=4, seed=1)
    (0, 5, 6, 10)
    >>> candidate_layers(6, buckets=7)
    Traceback (most recent call last):
    ...
    ValueError: buckets must be in [1, 6] for an encoder with 6 layers, got 7
    """
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
        raise ValueError(f"n_layers must be a positive integer, got {n_layers!r}")
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not 1 <= buckets <= n_layers:
        raise ValueError(
            f"buckets must be in [1, {n_layers}] for an encoder with {n_layers} layers, "
            f"got {buckets!r}"
        )
    rng = random.Random(seed)
    edges = np.linspace(0, n_layers, buckets + 1).round().astype(int)
    return tuple(rng.randrange(lo, hi) for lo, hi in itertools.pairwise(edges))
