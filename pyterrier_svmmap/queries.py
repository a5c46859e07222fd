"""Candidates grouped by query: the arrays every learner, loss and measure works on.

A set of queries is held as arrays in query order — ``raw`` (candidates × base functions, NaN where a
function did not retrieve the candidate), ``labels`` (one per candidate) and ``offsets`` (Q + 1 query
boundaries, from 0 to the number of candidates) — and this module is the one home of the operations on
them: checking, the query index of every candidate, the queries that can form ranking constraints,
subsets, and shards of whole queries.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np


def query_ids(offsets: np.ndarray) -> np.ndarray:
    """Query index (0..Q-1) of every candidate."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def check_ranking_arrays(raw, labels, offsets, what: str = "training") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``raw`` (n × F float, NaN allowed, inf not), ``labels`` (n,) and ``offsets`` (Q + 1, from 0 to n,
    non-decreasing) as arrays, or a ValueError that says which is wrong."""
    raw = np.asarray(raw, dtype=float)
    if raw.ndim != 2:
        raise ValueError(f"{what} scores must be a 2-d array (candidates × base functions), got shape {raw.shape}")
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or len(offsets) < 1 or not np.issubdtype(offsets.dtype, np.integer) \
            or offsets[0] != 0 or offsets[-1] != len(raw) or (np.diff(offsets) < 0).any():
        raise ValueError(f"{what} offsets must be non-decreasing integers from 0 to the number of candidates "
                         f"({len(raw)}), one more than the number of queries")
    if np.isinf(raw).any():
        r, c = np.argwhere(np.isinf(raw))[0]
        raise ValueError(f"{what} score of base function {c} is infinite for candidate {r}: scores must be "
                         "finite (NaN marks a candidate a base function did not retrieve)")
    if labels is not None:
        labels = np.asarray(labels, dtype=float)
        if labels.shape != (len(raw),) or not np.isfinite(labels).all():
            raise ValueError(f"{what} labels must be {len(raw)} finite numbers, one per candidate")
    return raw, labels, offsets.astype(np.int64)


def usable_queries(labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query, whether it has a relevant (label > 0) and a non-relevant candidate: the others cannot
    form ranking constraints."""
    rel = labels > 0
    sizes = np.diff(offsets)
    n_rel = np.add.reduceat(rel, offsets[:-1]) if len(rel) else np.zeros(len(sizes))
    n_rel = np.where(sizes > 0, n_rel, 0)
    return (n_rel > 0) & (n_rel < sizes)


def subset_queries(raw, labels, offsets, keep: np.ndarray, n_relevant=None):
    """The candidates of the queries where ``keep`` is True (arrays re-offset)."""
    sizes = np.diff(offsets)
    rows = np.repeat(keep, sizes)
    new_offsets = np.concatenate([[0], np.cumsum(sizes[keep])]).astype(np.int64)
    return raw[rows], labels[rows], new_offsets, (None if n_relevant is None else np.asarray(n_relevant)[keep])


def shard_sizes(n_queries: int, queries_per_shard: int) -> np.ndarray:
    """Queries per shard when ``n_queries`` queries are cut into blocks of ``queries_per_shard`` (the last
    may be smaller)."""
    return np.diff(np.r_[np.arange(0, n_queries, queries_per_shard), n_queries]).astype(np.int64)


def split_queries(raw, labels, offsets, sizes: Sequence[int]) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The arrays cut into consecutive shards of ``sizes[i]`` whole queries each (views, re-offset)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    out, start = [], 0
    for size in sizes:
        stop = start + int(size)
        lo, hi = offsets[start], offsets[stop]
        out.append((raw[lo:hi], labels[lo:hi], offsets[start:stop + 1] - lo))
        start = stop
    return out
