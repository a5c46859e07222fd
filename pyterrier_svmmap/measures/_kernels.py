"""Compiled kernels (numba) of the measures, loaded through :mod:`._jit`: the one ordering every measure and loss
starts from (:func:`descending_order`, the permutation of ``np.lexsort((-scores, query_ids(offsets)))``), and the AP
of every base function on every query for :func:`pyterrier_svmmap.selection.best_function` (:func:`function_ap`,
by counting for a query's few relevant candidates, by a sort for many), with the bits of
:func:`.measures.average_precision` (the same divisions, summed in the same order).
"""
from __future__ import annotations

import numpy as np
from numba import njit


#: :func:`descending_order` sorts a bucket up to this long by insertion, a longer one by buckets again (once)
_BUCKET_INSERTION = 48


@njit(cache=True, nogil=True)
def descending_order(scores, offsets, q_lo, q_hi, order):
    """``order[offsets[q]:offsets[q + 1]]`` = query q's candidates (global indices) by decreasing score, equal
    scores by index (a stable sort), for the queries q_lo..q_hi − 1. Each query is dealt by :func:`bucket_pass`
    into as many buckets as candidates; a bucket past :data:`_BUCKET_INSERTION` items is sorted by
    :func:`sort_bucket` (so that a few scores far from the rest do not leave the others in one bucket), a shorter
    one by insertion. A query's order depends on it alone."""
    longest = 0
    for q in range(q_lo, q_hi):
        longest = max(longest, offsets[q + 1] - offsets[q])
    spare = np.empty(longest, dtype=order.dtype)
    ends = np.empty(longest + 1, dtype=np.int64)
    for q in range(q_lo, q_hi):
        lo = offsets[q]
        n = offsets[q + 1] - lo
        items = order[lo:lo + n]
        for i in range(n):
            items[i] = lo + i
        if not bucket_pass(scores, items, spare[:n], ends):     # sorted there (insertion, mergesort) or one score
            continue
        start = 0
        for b in range(n):
            if ends[b] - start > _BUCKET_INSERTION:
                sort_bucket(scores, items[start:ends[b]], spare[:ends[b] - start])
            elif ends[b] - start > 1:                           # (most buckets hold one item or none)
                insertion_sort(scores, items, start, ends[b])
            start = ends[b]


@njit(cache=True, nogil=True)
def sort_bucket(scores, items, spare):
    """Sort a long bucket of :func:`descending_order` stably: :func:`bucket_pass` on its own extremes, then each
    of its buckets by insertion, or by a stable mergesort when long."""
    n = items.shape[0]
    ends = np.empty(n + 1, dtype=np.int64)
    if not bucket_pass(scores, items, spare, ends):
        return
    start = 0
    for b in range(n):
        if ends[b] - start > _BUCKET_INSERTION:
            stable_mergesort(scores, items[start:ends[b]], spare[start:ends[b]])
        else:
            insertion_sort(scores, items, start, ends[b])
        start = ends[b]


@njit(cache=True, nogil=True)
def bucket_pass(scores, items, spare, ends):
    """Deal ``items`` into as many buckets as items by their score's place between the extremes, decreasing, in
    their order within a bucket (a counting sort), ``ends[b]`` bucket b's end, and return True; False when the
    items are sorted already: short ones by insertion, NaN or infinite scores or extremes too close to scale by
    a stable mergesort (NaN last), one score left as it is."""
    n = items.shape[0]
    if n == 0:
        return False
    top = scores[items[0]]
    bottom = top
    numbers = True
    for i in range(n):
        x = scores[items[i]]
        numbers = numbers and x == x
        top = max(top, x)
        bottom = min(bottom, x)
    spread = top - bottom
    if numbers and n <= _BUCKET_INSERTION:
        insertion_sort(scores, items, 0, n)
        return False
    if spread == 0.0 and numbers:
        return False
    scale = (n - 1) / spread
    if not (numbers and spread < np.inf and scale < np.inf):
        stable_mergesort(scores, items, spare)
        return False
    ends[:n + 1] = 0
    for i in range(n):
        ends[min(int((top - scores[items[i]]) * scale), n - 1) + 1] += 1
    for b in range(n):
        ends[b + 1] += ends[b]                                  # ends[b]: bucket b's first slot
    for i in range(n):
        b = min(int((top - scores[items[i]]) * scale), n - 1)
        spare[ends[b]] = items[i]
        ends[b] += 1                                            # then: its end
    items[:] = spare
    return True


@njit(cache=True, nogil=True)
def insertion_sort(scores, items, lo, hi):
    """Sort ``items[lo:hi]`` by decreasing score, stably, by insertion."""
    for a in range(lo + 1, hi):
        v = items[a]
        x = scores[v]
        j = a - 1
        while j >= lo and scores[items[j]] < x:
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = v


@njit(cache=True, nogil=True)
def stable_mergesort(scores, items, spare):
    """Sort ``items`` by decreasing score, stably (NaN last), by numpy's mergesort."""
    local = np.argsort(-scores[items], kind="mergesort")
    spare[:] = items
    for i in range(items.shape[0]):
        items[i] = spare[local[i]]


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
    ``n_relevant[q]`` (0 where that is 0), without sorting the query: its relevant candidates are put in ranking
    order, each candidate finds by a binary search the first of them it ranks above, and a relevant candidate's
    rank is one more than the candidates counted at it or before. O(n log R) for R relevant of n; the precisions
    added in rank order, as
    :func:`pyterrier_svmmap.measures.ranked_average_precision` adds them."""
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        if n_relevant[q] <= 0:
            out[q] = 0.0
            continue
        xs = lo + np.flatnonzero(rel[lo:hi])
        n_rel = xs.shape[0]
        xs = xs[np.argsort(position[xs])]                       # by position, then (stably) by decreasing score
        xs = xs[np.argsort(-scores[xs], kind="mergesort")]
        count = np.zeros(n_rel + 1, dtype=np.int64)            # count[i]: candidates whose first one below is xs[i]
        last_s = scores[xs[n_rel - 1]] if n_rel else 0.0
        last_p = position[xs[n_rel - 1]] if n_rel else 0
        for y in range(lo, hi):
            sy = scores[y]
            py = position[y]
            if n_rel == 0 or not (sy > last_s or (sy == last_s and py < last_p)):
                continue                                        # ranked below every relevant candidate
            a = 0
            b = n_rel - 1                                       # y ranks above xs[b]: find the first such
            while a < b:
                m = (a + b) // 2
                sx = scores[xs[m]]
                if sy > sx or (sy == sx and py < position[xs[m]]):
                    b = m
                else:
                    a = m + 1
            count[a] += 1
        s = 0.0
        above = 0
        for i in range(n_rel):
            above += count[i]
            s += (i + 1) / (above + 1)
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
