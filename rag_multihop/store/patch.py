"""Deletes without matching: the title links of the passages that named a deleted page,
patched from their stored spans with numpy (:func:`patch_links`).

The rule (tested against fresh builds): the links of one source sharing a span are the
span's referents; a span that keeps a live referent (or the source itself) keeps its key,
so the text's spans are unchanged and each remaining referent weighs
``1 / (referents left)``; a span whose referents all go names nothing any more when its
flags are both ``complete`` and ``clear``; any other such span needs the text, and its
source is left to be recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_multihop.multihop.links import SPAN_CLEAR, SPAN_COMPLETE, SPAN_SELF
from rag_multihop.store.segment import Segment
from rag_multihop.store.tables import gather_csr

Arrays = dict[str, np.ndarray]


def _current_owner(segments: Sequence[Segment], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per global row, the segment whose ``link.rows`` defined it last and its entry there."""
    owner = np.full(n_rows, -1, dtype=np.int64)
    local = np.zeros(n_rows, dtype=np.int64)
    for i, segment in enumerate(segments):
        rows = np.asarray(segment["link.rows"], dtype=np.int64)
        owner[rows] = i
        local[rows] = np.arange(len(rows))
    return owner, local


def linked_sources(
    segments: Sequence[Segment], alive: np.ndarray, dead: Sequence[int]
) -> np.ndarray:
    """The live rows whose current title links reach a ``dead`` row, ascending (one
    vectorised scan of the stored link targets)."""
    if not len(dead) or not segments:
        return np.zeros(0, dtype=np.int64)
    doomed = np.zeros(alive.shape[0], dtype=bool)
    doomed[np.asarray(dead, dtype=np.int64)] = True
    owner, _ = _current_owner(segments, alive.shape[0])
    found = []
    for i, segment in enumerate(segments):
        hits = np.flatnonzero(doomed[np.asarray(segment["link.dst"])])
        if hits.size == 0:
            continue
        entries = np.unique(np.searchsorted(segment["link.ptr"], hits, side="right") - 1)
        rows = np.asarray(segment["link.rows"], dtype=np.int64)[entries]
        found.append(rows[(owner[rows] == i) & alive[rows]])
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def _gather(segments: Sequence[Segment], sources: np.ndarray, n_rows: int) -> Arrays:
    """The current links of ``sources`` laid end to end: per link its source and target,
    per span its link, start, end and flags."""
    owner, local = _current_owner(segments, n_rows)
    parts: list[Arrays] = []
    for i, segment in enumerate(segments):
        mine = sources[owner[sources] == i]
        if mine.size == 0:
            continue
        link_ptr, links = gather_csr(np.asarray(segment["link.ptr"]), local[mine])
        counts = np.asarray(segment["link.nspan"], dtype=np.int64)
        span_pointers = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=span_pointers[1:])
        span_ptr, spans = gather_csr(span_pointers, links)
        parts.append(
            {
                "source": np.repeat(mine, np.diff(link_ptr)),
                "target": np.asarray(segment["link.dst"], dtype=np.int64)[links],
                "nspan": counts[links],
                "link_of_span": np.repeat(np.arange(len(links)), np.diff(span_ptr)),
                "span": np.asarray(segment["link.span"])[spans],
                "flag": np.asarray(segment["link.sflag"])[spans],
            }
        )
    if not parts:
        return {}
    offsets = np.cumsum([0] + [len(p["target"]) for p in parts[:-1]])
    for part, offset in zip(parts, offsets, strict=True):
        part["link_of_span"] = part["link_of_span"] + offset
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def patch_links(
    segments: Sequence[Segment], alive: np.ndarray, sources: np.ndarray
) -> tuple[np.ndarray, Arrays, np.ndarray]:
    """The new title links of ``sources`` (live rows whose links reach rows no longer
    ``alive``): the rows patched, their ``link.*`` arrays (as
    :func:`~rag_multihop.store.derive.link_table` lays them out), and the rows whose text
    is needed (to be recomputed)."""
    empty = np.zeros(0, dtype=np.int64)
    links = _gather(segments, np.asarray(sources, dtype=np.int64), alive.shape[0])
    if not links:
        return empty, {}, empty
    span_source = links["source"][links["link_of_span"]]
    span_alive = alive[links["target"][links["link_of_span"]]]
    starts = links["span"][:, 0].astype(np.int64)
    # one group per (source, span start): spans never overlap within a source
    order = np.lexsort((starts, span_source))
    key_change = np.ones(len(order), dtype=bool)
    key_change[1:] = (span_source[order][1:] != span_source[order][:-1]) | (
        starts[order][1:] != starts[order][:-1]
    )
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(key_change) - 1
    n_groups = int(group.max()) + 1 if len(group) else 0
    living = np.bincount(group, weights=span_alive, minlength=n_groups).astype(np.int64)
    flags = np.zeros(n_groups, dtype=np.int64)
    np.maximum.at(flags, group, links["flag"].astype(np.int64))
    itself = (flags & SPAN_SELF) > 0
    gone = (living == 0) & ~itself
    both = SPAN_COMPLETE | SPAN_CLEAR
    needs_text = gone & ((flags & both) != both)
    recompute = np.unique(span_source[needs_text[group]])
    kept_referents = living + itself

    keep_link = alive[links["target"]] & ~np.isin(links["source"], recompute)
    link_index = np.flatnonzero(keep_link)
    # by source (segments interleave them), each source's links in their stored order
    link_index = link_index[np.argsort(links["source"][link_index], kind="stable")]
    # each kept link's weight: 1 / (referents left) of its spans, summed in text order from
    # 0.0 and capped at 1, as passage_links adds them
    first_span = np.zeros(len(links["target"]) + 1, dtype=np.int64)
    np.cumsum(links["nspan"], out=first_span[1:])
    contribution = 1.0 / np.maximum(kept_referents[group], 1)
    nspan = links["nspan"][link_index]
    weights = np.zeros(len(link_index))
    for j in range(int(nspan.max()) if len(nspan) else 0):
        has = nspan > j
        weights[has] += contribution[first_span[link_index[has]] + j]
    weights = np.minimum(weights, 1.0)

    rows = np.unique(links["source"][~np.isin(links["source"], recompute)])
    per_row = np.searchsorted(rows, links["source"][link_index])
    pointers = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(per_row, minlength=len(rows)), out=pointers[1:])
    _, span_positions = gather_csr(first_span, link_index)
    arrays = {
        "link.rows": rows.astype(np.int32),
        "link.ptr": pointers,
        "link.dst": links["target"][link_index].astype(np.int32),
        "link.w": weights.astype(np.float64),
        "link.nspan": nspan.astype(np.int32),
        "link.span": links["span"][span_positions].astype(np.int32).reshape(-1, 2),
        "link.sflag": links["flag"][span_positions].astype(np.uint8),
    }
    return rows, arrays, recompute
