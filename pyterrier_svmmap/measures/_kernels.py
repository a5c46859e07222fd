"""Compiled kernel (numba) of :func:`pyterrier_svmmap.selection.best_function`: the AP of every base function
on every query, by counting for a query's few relevant candidates, by a sort for many. Loaded through
:mod:`._jit`; it gives the bits of :func:`.measures.average_precision` (the same divisions, summed in the same
order).
"""
from __future__ import annotations

import numpy as np
from numba import njit


#: above this many relevant candidates in a query, :func:`function_ap` sorts the query instead of counting
COUNT_RELEVANT_MAX = 256


@njit(cache=True, nogil=True)
def function_ap(raw, rel, offsets, out):
    """``out[f, q]`` = AP of query q ranked by function f: scores descending, a NaN score last, ties by
    position (the order of :func:`.measures.rank_within_queries`), normalised by the query's relevant
    candidates (0 without any). A relevant candidate's rank is 1 + the candidates ranked above it, counted
    in O(|query|) — O(|query|·|relevant|) per query and function, no sort — or, above
    :data:`COUNT_RELEVANT_MAX` relevant candidates, read off a stable sort of the query (:func:`_sorted_ranks`)."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        where = lo + np.flatnonzero(rel[lo:hi])
        n_rel = where.shape[0]
        ranks = np.empty(n_rel, dtype=np.int64)
        for f in range(n_funcs):
            if n_rel > COUNT_RELEVANT_MAX:
                _sorted_ranks(raw, rel, lo, hi, f, ranks)
            else:
                for a in range(n_rel):
                    r = where[a]
                    sr = raw[r, f]
                    if sr != sr:
                        sr = -np.inf
                    above = 0
                    for d in range(lo, hi):
                        sd = raw[d, f]
                        if sd != sd:
                            sd = -np.inf
                        if sd > sr or (sd == sr and d < r):
                            above += 1
                    ranks[a] = above + 1
                ranks.sort()
            s = 0.0
            for a in range(n_rel):
                s += (a + 1) / ranks[a]
            out[f, q] = s / n_rel if n_rel else 0.0


@njit(cache=True, nogil=True)
def _sorted_ranks(raw, rel, lo, hi, f, ranks):
    """The 1-based ranks (ascending) of the relevant candidates of rows lo..hi by function f, as
    :func:`function_ap` counts them: a stable mergesort of the negated scores, a NaN taken as −∞."""
    neg = np.empty(hi - lo)
    for d in range(lo, hi):
        v = raw[d, f]
        neg[d - lo] = np.inf if v != v else -v
    local = np.argsort(neg, kind="mergesort")
    k = 0
    for i in range(hi - lo):
        if rel[lo + local[i]]:
            ranks[k] = i + 1
            k += 1
