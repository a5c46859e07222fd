"""Compiled kernels (numba) of the measures, loaded through :mod:`._jit`: the one ordering every measure and loss
starts from (:func:`score_order`, the permutation of ``np.lexsort((-scores, query_ids(offsets)))``), and the AP
of every base function on every query for :func:`pyterrier_svmmap.selection.best_function` (:func:`function_ap`,
by counting for a query's few relevant candidates, by a sort for many), with the bits of
:func:`.measures.average_precision` (the same divisions, summed in the same order).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def score_order(scores, offsets, order):
    """``np.lexsort((-scores, query_ids(offsets)))`` by a stable mergesort per query (no NaN: the caller checks)."""
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        local = np.argsort(-scores[lo:offsets[q + 1]], kind="mergesort")
        for i in range(local.shape[0]):
            order[lo + i] = lo + local[i]


#: above this many relevant candidates in a query, :func:`function_ap` sorts the query instead of counting
COUNT_RELEVANT_MAX = 256


@njit(cache=True, nogil=True)
def function_ap(raw, rel, offsets, out):
    """``out[f, q]`` = AP of query q ranked by function f (a NaN score last, ties by position), the relevant
    candidates' ranks counted without a sort, or above :data:`COUNT_RELEVANT_MAX` of them read off one."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        where = np.flatnonzero(rel[lo:hi])
        n_rel = where.shape[0]
        ranks = np.empty(n_rel, dtype=np.int64)
        for f in range(n_funcs):
            if n_rel > COUNT_RELEVANT_MAX:
                _sorted_ranks(raw, rel, lo, hi, f, ranks)
            else:
                relevant_ranks(raw[:, f], lo, hi, where, ranks)
                ranks.sort()
            s = 0.0
            for a in range(n_rel):
                s += (a + 1) / ranks[a]
            out[f, q] = s / n_rel if n_rel else 0.0


@njit(cache=True, nogil=True)
def tie_ordered_ap(scores, rel, position, offsets, n_relevant, out):
    """``out[q]`` = AP of query q ranked by decreasing score, ties by increasing ``position``, divided by
    ``n_relevant[q]`` (0 where that is 0): the relevant candidates' ranks counted without a sort, or above
    :data:`COUNT_RELEVANT_MAX` of them read off a stable sort; the precisions added in rank order, as
    :func:`pyterrier_svmmap.measures.ranked_average_precision` adds them."""
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        if n_relevant[q] <= 0:
            out[q] = 0.0
            continue
        where = np.flatnonzero(rel[lo:hi])
        n_rel = where.shape[0]
        ranks = np.empty(n_rel, dtype=np.int64)
        if n_rel > COUNT_RELEVANT_MAX:
            by_position = np.empty(hi - lo, dtype=np.int64)
            for i in range(hi - lo):
                by_position[position[lo + i] - lo] = lo + i
            local = np.argsort(-scores[by_position], kind="mergesort")
            ranks[:] = np.flatnonzero(rel[by_position[local]]) + 1
        else:
            for i in range(n_rel):
                x = lo + where[i]
                above = 0
                for y in range(lo, hi):
                    above += scores[y] > scores[x] or (scores[y] == scores[x] and position[y] < position[x])
                ranks[i] = above + 1
            ranks.sort()
        s = 0.0
        for a in range(n_rel):
            s += (a + 1) / ranks[a]
        out[q] = s / n_relevant[q]


@njit(cache=True, nogil=True)
def relevant_ranks(scores, lo, hi, rel, rank):
    """The 1-based ranks among rows lo..hi−1 (as :func:`function_ap` ranks) of the rows lo + rel[i], each counted
    in O(hi − lo) without a sort."""
    for i in range(rel.shape[0]):
        x = lo + rel[i]
        sx = scores[x] if scores[x] == scores[x] else -np.inf
        above = 0
        for y in range(lo, hi):
            sy = scores[y] if scores[y] == scores[y] else -np.inf
            above += sy > sx or (sy == sx and y < x)
        rank[i] = above + 1


@njit(cache=True, nogil=True)
def _sorted_ranks(raw, rel, lo, hi, f, ranks):
    """The ranks of :func:`relevant_ranks`, ascending, from a stable sort of rows lo..hi (a NaN taken as −∞)."""
    neg = -raw[lo:hi, f]
    neg[np.isnan(neg)] = np.inf
    ranks[:] = np.flatnonzero(rel[lo:hi][np.argsort(neg, kind="mergesort")]) + 1
