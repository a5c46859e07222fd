"""Compiled kernels of the MAP argmax (numba): the exact slot search described in :mod:`.map`, written as
loops — divide and conquer over non-relevant documents with an explicit stack — serial and ``nogil``: callers
run blocks of queries on threads (:func:`pyterrier_svmmap.threads.run_query_blocks`).

Imported lazily by :mod:`.map`. The kernels are cached on disk (``cache=True``), so only the first use pays
compilation. The tests compare them with numpy reference implementations (``tests/oracles/losses_reference.py``).
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
    m = 0.0
    for i in range(P):
        m += pos[i]
    m /= P
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
    stack[0, 0] = 0
    stack[0, 1] = N
    stack[0, 2] = 0
    stack[0, 3] = P
    sp = 1
    while sp > 0:
        sp -= 1
        jlo = stack[sp, 0]
        jhi = stack[sp, 1]
        klo = stack[sp, 2]
        khi = stack[sp, 3]
        if klo == khi:
            for r in range(jlo, jhi):
                slots[r] = klo
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
            stack[sp, 0] = mid + 1
            stack[sp, 1] = jhi
            stack[sp, 2] = bt
            stack[sp, 3] = khi
            sp += 1
        if jlo < mid:
            stack[sp, 0] = jlo
            stack[sp, 1] = mid
            stack[sp, 2] = klo
            stack[sp, 3] = bt
            sp += 1


@njit(cache=True, nogil=True)
def violation_sorted(scores, rel, order, lo, hi, H, coef):
    """Δ(ŷ) of the query of candidates lo..hi−1, given ``order[lo:hi]``: its candidates (global
    indices) by decreasing score. Writes c(y*) − c(ŷ) into ``coef``."""
    P = 0
    for r in range(lo, hi):
        if rel[order[r]]:
            P += 1
    N = hi - lo - P
    if P == 0 or N == 0:
        for r in range(lo, hi):
            coef[order[r]] = 0.0
        return 0.0
    ps = np.empty(P)
    ns = np.empty(N)
    pi = np.empty(P, dtype=np.int64)
    ni = np.empty(N, dtype=np.int64)
    a = 0
    b = 0
    for r in range(lo, hi):
        d = order[r]
        if rel[d]:
            pi[a] = d
            ps[a] = scores[d]
            a += 1
        else:
            ni[b] = d
            ns[b] = scores[d]
            b += 1
    slots = np.empty(N, dtype=np.int64)
    slot_search(ps, ns, H, 0.0, slots)
    cnt = np.zeros(P + 1, dtype=np.int64)
    for i in range(N):
        cnt[slots[i]] += 1
    norm = 2.0 / (P * N)
    above = 0
    ap = 0.0
    for i in range(P):
        above += cnt[i]                       # non-relevant with slot ≤ i are above the i-th relevant
        ap += (i + 1.0) / (i + 1.0 + above)
        coef[pi[i]] = norm * above
    for i in range(N):
        coef[ni[i]] = -norm * (P - slots[i])
    return 1.0 - ap / P


@njit(cache=True, nogil=True)
def batch_violation_serial(scores, rel, order, offsets, H, deltas, coef):
    for q in range(offsets.shape[0] - 1):
        deltas[q] = violation_sorted(scores, rel, order, offsets[q], offsets[q + 1], H, coef)
