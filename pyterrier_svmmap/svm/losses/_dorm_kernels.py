"""Compiled batch violation and single-query argmax of DORM (Le & Smola 2007; Chakrabarti et al. 2008 §3.5),
with the contract and the tables of :mod:`._rank_kernels` (``A[r]``: DORM's decay, zero from its window on)."""
from __future__ import annotations

import numpy as np
from numba import njit

from pyterrier_svmmap.svm.losses._rank_kernels import merge_by_score, ranking_classes, split_query


@njit(cache=True, nogil=True)
def dorm_query(scores, rel, order, lo, hi, k, window, D, A, coef):
    """Δ(ŷ) of one query for DORM (Δ = 1 − nDCG@k, Ψ = Σ A(rank)·φ, A zero from ``window`` on).

    The assignment max_π Σ π_ij (s_i·A(j) − z_i·D(j)/DCG*) of §3.5 has an optimum that keeps each
    relevance class in score order (swapping two candidates of one class at ranks j < j' changes the
    value by (s_hi − s_lo)(A(j) − A(j')) ≥ 0, as A is non-increasing), so it is a merge of the two
    sorted lists: a DP over (rank j, relevant placed g) for the m = min(window, n) ranks that carry
    weight, O(m · min(|P|, m)). Ranks ≥ m have A = 0 and, as window ≥ k, D = 0: immaterial.
    """
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    P = pi.shape[0]
    N = ni.shape[0]
    n = P + N
    m = n if (window < 0 or window > n) else window
    # c(y*): the mean of A over the ranks of the class (average over all correct rankings)
    coef[pi] = A[:P].sum() / P if P > 0 else 0.0
    coef[ni] = A[P:n].sum() / N if N > 0 else 0.0
    if P == 0 or N == 0:                         # every ranking is correct: ŷ follows the scores
        only = pi if P > 0 else ni
        for r in range(m):                       # m ≤ n, the size of the class
            coef[only[r]] -= A[r]
        return 0.0
    took_rel, g_best, idcg = dorm_dp(ps, ns, m, k, D, A)
    top = np.empty(m, dtype=np.int64)
    dorm_top(pi, ni, m, took_rel, g_best, top)
    dcg = 0.0
    for j in range(m - 1, -1, -1):               # rank m − 1 first, as the DP's walk back
        coef[top[j]] -= A[j]
        if rel[top[j]] and (k < 0 or j < k):
            dcg += D[j]
    return 1.0 - dcg / idcg


@njit(cache=True, nogil=True)
def dorm_dp(ps, ns, m, k, D, A):
    """The DP of :func:`dorm_query` over the m weighted ranks of a query with both classes non-empty:
    (``took_rel[j, g]``: rank j takes relevant number g − 1 on the best path with g relevant in ranks ≤ j,
    the number of relevant candidates in the m ranks, DCG*)."""
    P = ps.shape[0]
    N = ns.shape[0]
    idcg = 0.0
    for r in range(P):
        if k < 0 or r < k:
            idcg += D[r]
    G = min(P, m)
    f = np.full(G + 1, -np.inf)
    f[0] = 0.0
    took_rel = np.zeros((m, G + 1), dtype=np.bool_)
    for j in range(m):
        aj = A[j]
        dj = D[j] / idcg if (k < 0 or j < k) else 0.0
        g_lo = max(0, j + 1 - N)
        g_hi = min(j + 1, G)
        for g in range(g_hi, g_lo - 1, -1):      # descending: f[g − 1] is still the old value
            best = -np.inf
            if g <= j and j - g < N:             # rank j takes non-relevant number j − g
                best = f[g] + aj * ns[j - g]
            if g >= 1 and g - 1 >= j - N:        # rank j takes relevant number g − 1
                v = f[g - 1] + aj * ps[g - 1] - dj
                if v >= best:
                    best = v
                    took_rel[j, g] = True
            f[g] = best
    g_best = max(0, m - N)
    for g in range(max(0, m - N), min(m, G) + 1):
        if f[g] > f[g_best]:
            g_best = g
    return took_rel, g_best, idcg


@njit(cache=True, nogil=True)
def dorm_top(pi, ni, m, took_rel, g_best, out):
    """The candidates of the m weighted ranks on :func:`dorm_dp`'s best path into ``out[:m]`` (walked back)."""
    g = g_best
    for j in range(m - 1, -1, -1):
        if took_rel[j, g]:
            g -= 1
            out[j] = pi[g]
        else:
            out[j] = ni[j - g]


@njit(cache=True, nogil=True)
def dorm_batch(scores, rel, order, offsets, k, window, D, A, deltas, coef):
    """DORM batch violation, query after query."""
    for q in range(offsets.shape[0] - 1):
        deltas[q] = dorm_query(scores, rel, order, offsets[q], offsets[q + 1], k, window, D, A, coef)


@njit(cache=True, nogil=True)
def dorm_ranking(scores, rel, order, lo, hi, k, window, D, A, out):
    """The most violated ranking of one query for DORM: the m weighted ranks from :func:`dorm_dp`, then the
    other candidates by decreasing score (equal scores by index; immaterial to H)."""
    pi, ps, ni, ns, whole = ranking_classes(scores, rel, order, lo, hi, out)
    if whole:
        return
    n = pi.shape[0] + ni.shape[0]
    m = n if (window < 0 or window > n) else window
    took_rel, g_best, _ = dorm_dp(ps, ns, m, k, D, A)
    dorm_top(pi, ni, m, took_rel, g_best, out)
    merge_by_score(pi, ps, g_best, ni, ns, m - g_best, True, out, m)
