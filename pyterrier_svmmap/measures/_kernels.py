"""Compiled kernel (numba, optional) of :func:`pyterrier_svmmap.svm.ranker.best_function`: the AP of every base
function on every query without sorting, for the few relevant candidates of a query only. Loaded through
:mod:`._jit`; the numpy path (one sort per function, :func:`.measures.average_precision`) is the fallback
and gives the same bits (the same divisions, summed in the same order).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def function_ap(raw, rel, offsets, out):
    """``out[f, q]`` = AP of query q ranked by function f: scores descending, a NaN score last, ties by
    position (the order of :func:`.measures.rank_within_queries`), normalised by the query's relevant
    candidates (0 without any). A relevant candidate's rank is 1 + the candidates ranked above it, counted
    in O(|query|) — O(|query|·|relevant|) per query and function, no sort."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        n_rel = 0
        for d in range(lo, hi):
            if rel[d]:
                n_rel += 1
        if n_rel == 0:
            for f in range(n_funcs):
                out[f, q] = 0.0
            continue
        where = np.empty(n_rel, dtype=np.int64)
        k = 0
        for d in range(lo, hi):
            if rel[d]:
                where[k] = d
                k += 1
        ranks = np.empty(n_rel, dtype=np.int64)
        for f in range(n_funcs):
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
            out[f, q] = s / n_rel
