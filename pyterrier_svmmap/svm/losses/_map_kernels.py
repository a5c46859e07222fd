"""Compiled slot search of the MAP argmax (numba), described in :mod:`.map`, written as loops — divide and conquer
over non-relevant documents with an explicit stack — serial and ``nogil``; the MAP batch that calls it is
:func:`._rank_kernels.map_batch`, whose callers run blocks of queries on threads. The tests compare it with numpy
reference implementations (``tests/oracles/losses_reference.py``).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def slot_search(pos, neg, table, inv_idcg, slots):
    """Optimal 0-based slots (relevant candidates above) of the (descending) non-relevant scores ``neg`` against
    ``pos``, the first maximisers of slot t's gain, non-decreasing in j (Yue et al. 2007, Theorem 2), found by
    divide and conquer: for Δ = 1 − AP (``inv_idcg`` = 0, ``table`` the harmonic numbers H) the gain is
    −(j/(j+t) + H[j+t−1])/|P|, for Δ = 1 − nDCG without cutoff (``table`` the discounts D, see
    :func:`._rank_kernels.ndcg_solve`) D[t+j−1]/DCG*; both minus 2/(|P||N|)·Σ_{i≥t}(s_i − s_j)."""
    P = pos.shape[0]
    N = neg.shape[0]
    m = pos.sum() / P
    suf = np.empty(P + 1)
    suf[P] = 0.0
    for i in range(P - 1, -1, -1):
        suf[i] = suf[i + 1] + (pos[i] - m)
    inv_p = 1.0 / P
    c = 2.0 / (P * N)
    depth = 4
    n = N
    while n > 0:
        depth += 1
        n >>= 1
    stack = np.empty((2 * depth + 4, 4), dtype=np.int64)
    stack[0] = (0, N, 0, P)
    sp = 1
    while sp > 0:
        sp -= 1
        jlo = stack[sp, 0]
        jhi = stack[sp, 1]
        klo = stack[sp, 2]
        khi = stack[sp, 3]
        if klo == khi:
            slots[jlo:jhi] = klo
            continue
        mid = (jlo + jhi) // 2
        j = mid + 1
        sj = neg[mid] - m
        best = -np.inf
        bt = klo
        for t in range(klo, khi + 1):
            if inv_idcg == 0.0:
                g = -(j / (j + t) + table[j + t - 1]) * inv_p - c * (suf[t] + t * sj)
            else:
                g = table[t + j - 1] * inv_idcg - c * (suf[t] + t * sj)
            if g > best:
                best = g
                bt = t
        slots[mid] = bt
        if mid + 1 < jhi:
            stack[sp] = (mid + 1, jhi, bt, khi)
            sp += 1
        if jlo < mid:
            stack[sp] = (jlo, mid, klo, bt)
            sp += 1
