"""Compiled kernels (numba) of the feature layer: the bin-code block's Φw and Φᵀc without the n×F temporaries,
the per-query scalings, the thresholds and the bin codes.

Loaded lazily by :func:`pyterrier_svmmap.features.kernels`. Each kernel computes in the order of its numpy
reference in ``tests/oracles/features_reference.py`` (a gather and row sums, a weighted bincount, ...), so that
it returns the same bits; each docstring says which.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pyterrier_svmmap.products import PW_BLOCK as _PW_BLOCK
from pyterrier_svmmap._product_kernels import pairwise as _pairwise
from pyterrier_svmmap.features.transforms import Z_LIMIT


@njit(cache=True, nogil=True)
def cumulative_table(w, n_funcs, n_thresholds):
    """(F, T + 1) table: ``cum[f, b]`` = Σ of f's first b threshold weights (``cum[f, 0] = 0``)."""
    cum = np.zeros((n_funcs, n_thresholds + 1))
    for f in range(n_funcs):
        s = -0.0                                   # the sum's identity: cum[f, 1] is the first weight, even −0
        for t in range(n_thresholds):
            s += w[f * n_thresholds + t]
            cum[f, t + 1] = s
    return cum


@njit(cache=True, nogil=True)
def binned_dot(codes, cum, out):
    """``out[d] = Σ_f cum[f, codes[d, f]]``, summed as numpy sums a contiguous row; the table is read flat at
    unsigned offsets, so that numba skips the negative-index wrap-around (1.7× faster at F = 46)."""
    n, n_funcs = codes.shape
    t1 = np.uint64(cum.shape[1])
    flat = cum.ravel()
    if n_funcs < 8:
        for d in range(n):
            row = codes[d]
            acc = 0.0
            off = np.uint64(0)
            for f in range(n_funcs):
                acc += flat[off + row[f]]
                off += t1
            out[d] = acc
    elif n_funcs <= _PW_BLOCK:
        m = n_funcs - n_funcs % 8
        t8 = np.uint64(8) * t1
        for d in range(n):
            row = codes[d]
            r0 = flat[row[0]]
            r1 = flat[t1 + row[1]]
            r2 = flat[np.uint64(2) * t1 + row[2]]
            r3 = flat[np.uint64(3) * t1 + row[3]]
            r4 = flat[np.uint64(4) * t1 + row[4]]
            r5 = flat[np.uint64(5) * t1 + row[5]]
            r6 = flat[np.uint64(6) * t1 + row[6]]
            r7 = flat[np.uint64(7) * t1 + row[7]]
            off = t8
            for f in range(8, m, 8):
                p = row[f:f + 8]
                r0 += flat[off + p[0]]
                r1 += flat[off + t1 + p[1]]
                r2 += flat[off + np.uint64(2) * t1 + p[2]]
                r3 += flat[off + np.uint64(3) * t1 + p[3]]
                r4 += flat[off + np.uint64(4) * t1 + p[4]]
                r5 += flat[off + np.uint64(5) * t1 + p[5]]
                r6 += flat[off + np.uint64(6) * t1 + p[6]]
                r7 += flat[off + np.uint64(7) * t1 + p[7]]
                off += t8
            acc = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            for f in range(m, n_funcs):
                acc += flat[off + row[f]]
                off += t1
            out[d] = acc
    else:
        buf = np.empty(n_funcs)
        for d in range(n):
            row = codes[d]
            off = np.uint64(0)
            for f in range(n_funcs):
                buf[f] = flat[off + row[f]]
                off += t1
            out[d] = _pairwise(buf, n_funcs)


@njit(cache=True, nogil=True)
def binned_rdot(codes, c, n_thresholds, f0, f1, out):
    """``out[f·T + t] = Σ_{d: codes[d, f] > t} c[d]`` for f0 ≤ f < f1: a weighted histogram of f's codes (rows in
    order, as ``np.bincount``) summed from the top; a function's sums do not depend on the range it is in."""
    n = codes.shape[0]
    hist = np.zeros((f1 - f0, n_thresholds + 1))
    for d in range(n):
        cd = c[d]
        row = codes[d]
        for f in range(f0, f1):
            hist[f - f0, row[f]] += cd
    for f in range(f0, f1):
        base = f * n_thresholds
        s = hist[f - f0, n_thresholds]
        for t in range(n_thresholds - 1, -1, -1):
            out[base + t] = s
            s += hist[f - f0, t]


@njit(cache=True, nogil=True)
def _depth_threshold(raw, a, b, f, depth, buf):
    """The ``depth``-th highest score of ``f`` in rows ``a:b`` (NaN as −inf; −inf for fewer rows), ``buf`` b − a."""
    m = b - a
    if m < depth:
        return -np.inf
    for d in range(a, b):
        x = raw[d, f]
        buf[d - a] = x if x == x else -np.inf
    k, lo, hi = m - depth, 0, m - 1                # Hoare's selection of the k-th smallest (np.partition's
    while lo < hi:                                 # value; a few loops compile in a fraction of its time)
        pivot = buf[(lo + hi) >> 1]
        i, j = lo, hi
        while i <= j:
            while buf[i] < pivot:
                i += 1
            while buf[j] > pivot:
                j -= 1
            if i <= j:
                buf[i], buf[j] = buf[j], buf[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return buf[k]


@njit(cache=True, nogil=True)
def top_of_queries(raw, offsets, depth, out):
    """:func:`pyterrier_svmmap.features.thresholds.top_of_queries` for the queries of ``offsets`` (absolute row
    indices) into ``out``."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        m = b - a
        buf = np.empty(m)
        for f in range(n_funcs):
            col = raw[a:b, f]
            out[a:b, f] = np.where(col >= _depth_threshold(raw, a, b, f, depth, buf), col, np.nan)


#: up to this many thresholds, :func:`bin_codes` counts them all (compares the compiler vectorises), above it
#: searches them
LINEAR_CODES_MAX = 64


@njit(cache=True, nogil=True)
def bin_codes(scaled, thresholds, codes):
    """``codes[d, f]`` = how many of ``thresholds[f]`` (ascending) lie strictly below ``scaled[d, f]``; a NaN score
    keeps the code already there (0)."""
    n, n_funcs = scaled.shape
    n_thr = thresholds.shape[1]
    for d in range(n):
        for f in range(n_funcs):
            x = scaled[d, f]
            if x != x:
                continue
            row = thresholds[f]
            if n_thr <= LINEAR_CODES_MAX:
                c = 0
                for t in range(n_thr):
                    c += row[t] < x
                codes[d, f] = c
            else:
                codes[d, f] = np.searchsorted(row, x)


@njit(cache=True, nogil=True)
def column_abs_max(raw, out):
    """``out[f]`` = max(``out[f]``, the largest |x| of column f's retrieved (non-NaN) scores)."""
    n, n_funcs = raw.shape
    for d in range(n):
        for f in range(n_funcs):
            x = abs(raw[d, f])
            if x > out[f]:
                out[f] = x


@njit(cache=True, nogil=True)
def gather_columns(raw, f0, f1, out, filled):
    """The non-NaN scores of columns f0 ≤ f < f1 of ``raw`` appended in row order to row f − f0 of ``out``."""
    for d in range(raw.shape[0]):
        for f in range(f0, f1):
            x = raw[d, f]
            if x == x:
                out[f - f0, filled[f - f0]] = x
                filled[f - f0] += 1


@njit(cache=True, nogil=True)
def minmax_normalise(raw, offsets, out):
    """:func:`pyterrier_svmmap.features.transforms.minmax_normalise` into ``out``: per query and function, NaN stays
    NaN, (x − min)/(max − min) where max > min, else 1 — the reference's operations, so the same bits."""
    n_funcs = raw.shape[1]
    lo = np.empty(n_funcs)
    hi = np.empty(n_funcs)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        lo[:] = np.inf
        hi[:] = -np.inf
        for d in range(a, b):
            for f in range(n_funcs):
                x = raw[d, f]                       # (a NaN compares false)
                if x < lo[f]:
                    lo[f] = x
                if x > hi[f]:
                    hi[f] = x
        for d in range(a, b):
            for f in range(n_funcs):
                x = raw[d, f]
                if x != x:
                    out[d, f] = np.nan
                elif lo[f] > -np.inf and hi[f] - lo[f] > 0:     # a −inf score: the reference's NaN range → 1
                    out[d, f] = (x - lo[f]) / (hi[f] - lo[f])
                else:
                    out[d, f] = 1.0


@njit(cache=True, nogil=True)
def percentiles(raw, offsets, out):
    """:func:`pyterrier_svmmap.features.transforms.percentiles` into ``out``, the reference's integers divided as
    it divides them (the same bits)."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        for f in range(n_funcs):
            col = raw[a:b, f]
            kept = np.flatnonzero(col == col)       # the retrieved candidates, in row order
            vals = col[kept]
            cnt = kept.shape[0]
            out[a:b, f] = np.nan
            order = np.argsort(vals)
            for t in range(cnt - 1, -1, -1):         # from the top: a run of equal scores gets its last rank
                if t == cnt - 1 or vals[order[t]] != vals[order[t + 1]]:
                    p = (t + 1) / cnt
                out[a + kept[order[t]], f] = p


@njit(cache=True, nogil=True)
def query_spread(raw, offsets, prescale, sumsq, counts, varies):
    """Per query q of ``offsets`` and function f, of the retrieved scores y = raw·prescale[f] (exact: powers of two):
    their count, whether they differ and Σ (y − mean)², exactly 0 when all are equal (their mean need not be)."""
    n_funcs = raw.shape[1]
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        for f in range(n_funcs):
            p = prescale[f]
            lo = np.inf
            hi = -np.inf
            total = 0.0
            m = 0
            for d in range(a, b):
                x = raw[d, f]
                if x == x:
                    y = x * p
                    lo = min(lo, y)
                    hi = max(hi, y)
                    total += y
                    m += 1
            counts[q, f] = m
            varies[q, f] = hi > lo
            acc = 0.0
            if m > 1 and hi > lo:
                mean = total / m
                for d in range(a, b):
                    x = raw[d, f]
                    if x == x:
                        dev = x * p - mean
                        acc += dev * dev
            sumsq[q, f] = acc


@njit(cache=True, nogil=True)
def standardise(raw, offsets, prescale, column_scale, out):
    """:func:`pyterrier_svmmap.features.transforms.standardise_scores` into ``out``, the same bits (the products by
    the power of two p are exact: the query's lowest score gives exactly 0)."""
    n_funcs = raw.shape[1]
    lo = np.empty(n_funcs)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        lo[:] = np.inf
        for d in range(a, b):
            for f in range(n_funcs):
                x = raw[d, f]
                if x < lo[f]:
                    lo[f] = x
        for d in range(a, b):
            for f in range(n_funcs):
                x = raw[d, f]
                if x != x or column_scale[f] == 0.0:
                    out[d, f] = 0.0
                else:
                    p = prescale[f]
                    dev = x * p - lo[f] * p
                    if dev != dev:                   # inf − inf: scores far beyond the training ones
                        dev = (x - lo[f]) * p
                    out[d, f] = min(dev * column_scale[f], Z_LIMIT)


@njit(cache=True, nogil=True)
def binned_spread(codes, offsets, n_thresholds, out):
    """``out[q]`` = Σ_d ‖φ(d) − φ̄_q‖² of the bin codes' indicators: a threshold that k of n candidates exceed adds
    k(n − k)/n."""
    n_funcs = codes.shape[1]
    hist = np.zeros(n_thresholds + 1)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        n = b - a
        acc = 0.0
        if n > 1:
            for f in range(n_funcs):
                hist[:] = 0.0
                for d in range(a, b):
                    hist[codes[d, f]] += 1.0
                above = float(n)
                for t in range(n_thresholds):
                    above -= hist[t]
                    acc += above * (n - above) / n
        out[q] = acc
