"""Compiled batch violations of the structural losses (numba): MAP, NDCG@k, NDCG-NC, MRR@k, ROC
and the classification baselines (:func:`classification_batch`, which needs no score order); DORM's are
in :mod:`._dorm_kernels`.

Every ``*_batch`` kernel takes the concatenated ``scores``, relevance ``rel`` (booleans), ``order`` (each
query's candidates, global indices, by decreasing score, ties in any order:
:func:`pyterrier_svmmap.measures._kernels.descending_order` gives the stable one) and ``offsets``, then
the loss's parameters, and fills ``deltas`` (Δ(ŷ) per query) and ``coef`` (c(y*) − c(ŷ) per candidate)
— the contract of :meth:`.base.Loss.batch_violation`. Queries run one after the other (serial;
``nogil`` so that callers may thread). Loaded by :func:`._numba.kernels`; the tests compare them with the
numpy reference implementations of ``tests/oracles/losses_reference.py``.

Within a relevance class the kernels restore the *stable* order (equal scores by candidate index), the
order the references' ``split_by_relevance`` gives, so that the kernels and the references break ties alike
and a model does not depend on the sort's order of ties.

Cutoffs and windows are passed as integers, −1 meaning None. Tables: ``D[r] = 1/log2(r + 2)`` (the nDCG
discount without cutoff, :func:`.ndcg.discounts`), ``A[r]`` (DORM's decay, zero from its window on),
each at least as long as the largest query.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pyterrier_svmmap.svm.losses._map_kernels import slot_search


# ---------------------------------------------------------------------------------------------
# shared: one query's relevance classes in stable score order, and the pairwise coefficients
# ---------------------------------------------------------------------------------------------
#: tie runs up to this long are sorted in place by insertion; longer ones by ``np.sort``
_INSERTION_RUN = 64


@njit(cache=True, nogil=True)
def stable_runs(idx, key):
    """Sort every run of equal ``key`` in ``idx`` by index (``idx`` is ordered by non-increasing key):
    the order a stable sort by decreasing key gives. Short runs (the common case: binned features tie
    ~40 % of a query's scores in runs of ~5) by insertion in place, which made the kernels' split of a
    query ~3× faster than an allocating ``np.sort`` per run."""
    n = idx.shape[0]
    a = 0
    while a < n:
        b = a + 1
        while b < n and key[b] == key[a]:
            b += 1
        if b - a > _INSERTION_RUN:
            if (np.diff(idx[a:b]) < 0).any():               # not already by index (the sorts' own order)
                idx[a:b] = np.sort(idx[a:b])
        elif b - a > 1:
            for i in range(a + 1, b):
                v = idx[i]
                j = i - 1
                while j >= a and idx[j] > v:
                    idx[j + 1] = idx[j]
                    j -= 1
                idx[j + 1] = v
        a = b


@njit(cache=True, nogil=True)
def split_query(scores, rel, order, lo, hi):
    """(relevant indices, their scores, non-relevant indices, their scores) of the query lo..hi−1,
    each by decreasing score, equal scores by index (Yue et al. 2007, Observation 1): the same arrays for any
    order of equal scores in ``order``."""
    P = rel[lo:hi].sum()                         # order[lo:hi] is a permutation of lo..hi − 1
    N = hi - lo - P
    pi = np.empty(P, dtype=np.int64)
    ps = np.empty(P)
    ni = np.empty(N, dtype=np.int64)
    ns = np.empty(N)
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
    stable_runs(pi, ps)
    stable_runs(ni, ns)
    return pi, ps, ni, ns


@njit(cache=True, nogil=True)
def pairwise_coef(pi, ni, counts, coef):
    """c(y*) − c(ŷ) of the pairwise map φ_po (Chakrabarti et al. Eq. 3; Yue et al. §3) for the
    ranking where the g-th relevant candidate has ``counts[g]`` (non-decreasing) non-relevant above it:
    2·a_g/(|P||N|) for relevant g, −2·(relevant below j)/(|P||N|) for non-relevant j."""
    P = pi.shape[0]
    N = ni.shape[0]
    norm = 2.0 / (P * N)
    for g in range(P):
        coef[pi[g]] = norm * counts[g]
    g = 0
    for j in range(N):
        while g < P and counts[g] <= j:          # relevant g is above non-relevant j
            g += 1
        coef[ni[j]] = -norm * (P - g)


# ---------------------------------------------------------------------------------------------
# MAP (Yue et al. 2007, Algorithm 2)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def map_query(scores, rel, order, lo, hi, H, coef):
    """Δ(ŷ) of one query for Δ = 1 − AP (the slots of :func:`._map_kernels.slot_search`, ``H`` the harmonic
    numbers); writes c(y*) − c(ŷ) into ``coef``."""
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    P = pi.shape[0]
    N = ni.shape[0]
    if P == 0 or N == 0:
        coef[order[lo:hi]] = 0.0                 # no constraint: one class is empty
        return 0.0
    slots = np.empty(N, dtype=np.int64)
    slot_search(ps, ns, H, 0.0, slots)
    norm = 2.0 / (P * N)
    above = 0
    ap = 0.0
    for g in range(P):                           # the pairwise coefficients (:func:`pairwise_coef`) from the slots
        while above < N and slots[above] <= g:   # non-relevant with slot ≤ g are above relevant g
            above += 1
        ap += (g + 1.0) / (g + 1.0 + above)
        coef[pi[g]] = norm * above
    for j in range(N):
        coef[ni[j]] = -norm * (P - slots[j])
    return 1.0 - ap / P


@njit(cache=True, nogil=True)
def map_batch(scores, rel, order, offsets, H, deltas, coef):
    """MAP batch violation, query after query."""
    for q in range(offsets.shape[0] - 1):
        deltas[q] = map_query(scores, rel, order, offsets[q], offsets[q + 1], H, coef)


# ---------------------------------------------------------------------------------------------
# NDCG (Chakrabarti et al. 2008 §3.4)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def ndcg_counts_k(ps, ns, kk, D, idcg, counts):
    """The DP of :mod:`.ndcg` (reference implementation: ``ndcg_counts`` of the tests' oracles) for a cutoff kk < |P| + |N| (same arithmetic, same ties):
    the reduced table of Facts 3.3/3.4 over unclipped rows plus the folded tail. Fills ``counts``
    (non-relevant above each relevant candidate) and returns H* = max_y H(y)."""
    P = ps.shape[0]
    N = ns.shape[0]
    norm = 1.0 / (P * N)
    pref_b = np.empty(N + 1)
    pref_b[0] = 0.0
    for l in range(N):
        pref_b[l + 1] = pref_b[l] + ns[l]
    tot_b = pref_b[N]
    pref_g = np.empty(P + 1)
    pref_g[0] = 0.0
    for g in range(P):
        pref_g[g + 1] = pref_g[g] + ps[g]
    # a*_g: non-relevant scoring strictly above s_g (non-decreasing in g)
    a_star = np.empty(P, dtype=np.int64)
    l = 0
    for g in range(P):
        while l < N and ns[l] > ps[g]:
            l += 1
        a_star[g] = l
    suf_opt = np.empty(P + 1)
    suf_opt[P] = 0.0
    acc = 0.0
    for g in range(P - 1, -1, -1):
        a = a_star[g]
        acc += norm * (2.0 * pref_b[a] - tot_b + (N - 2.0 * a) * ps[g])
        suf_opt[g] = acc
    rows = min(P, kk)
    best_val = _ndcg_tail(np.int64(0), kk, N, norm, pref_b, tot_b, pref_g, a_star, suf_opt)
    best_g0 = 0
    T = np.empty((rows, kk))
    back = np.empty((rows, kk), dtype=np.int64)
    run = np.empty(kk)
    arg = np.empty(kk, dtype=np.int64)
    last = np.empty(rows, dtype=np.int64)       # each row's best column (ties to the later), for the traceback
    for g in range(rows):
        width = min(N, kk - 1 - g) + 1
        for a in range(width):
            v = norm * (2.0 * pref_b[a] - tot_b + (N - 2.0 * a) * ps[g]) - D[g + a] / idcg
            if g == 0:
                T[g, a] = v
            else:
                T[g, a] = v + run[a]
                back[g, a] = arg[a]
        best = -np.inf
        at = 0
        for a in range(width):                   # running maximum, ties to the later column
            if T[g, a] >= best:
                best = T[g, a]
                at = a
            run[a] = best
            arg[a] = at
        last[g] = at
        cand = run[width - 1]
        if g + 1 < P:
            cand = cand + _ndcg_tail(g + 1, kk, N, norm, pref_b, tot_b, pref_g, a_star, suf_opt)
        if cand > best_val:
            best_val = cand
            best_g0 = g + 1
    floor = max(kk - best_g0, 0)
    for g in range(best_g0, P):
        counts[g] = max(a_star[g], floor)
    if best_g0 > 0:
        col = last[best_g0 - 1]
        for g in range(best_g0 - 1, -1, -1):
            counts[g] = col
            if g > 0:
                col = back[g, col]
    return 1.0 + best_val


@njit(cache=True, nogil=True)
def _ndcg_tail(g0, kk, N, norm, pref_b, tot_b, pref_g, a_star, suf_opt):
    """Σ_{h ≥ g0} CellScore(h, max(a*_h, kk − g0)); −inf if kk − g0 > |N| (see :mod:`.ndcg`)."""
    m = kk - g0
    if m > N:
        return -np.inf
    if m < 0:
        m = 0
    cut = g0 + np.searchsorted(a_star[g0:], m)   # first h ≥ g0 with a*_h ≥ m
    cnt = cut - g0
    low = norm * (cnt * (2.0 * pref_b[m] - tot_b) + (N - 2.0 * m) * (pref_g[cut] - pref_g[g0]))
    return low + suf_opt[cut]


@njit(cache=True, nogil=True)
def ndcg_solve(ps, ns, k, D, counts):
    """The argmax of one query for Δ = 1 − nDCG@k (k = −1: no cutoff) from its score-sorted relevant ``ps``
    and non-relevant ``ns`` scores (both non-empty): fills ``counts`` (non-relevant above each relevant
    candidate) and returns (the effective cutoff kk, DCG*)."""
    P = ps.shape[0]
    N = ns.shape[0]
    n = P + N
    kk = n if (k < 0 or k > n) else k
    idcg = 0.0
    for r in range(min(P, kk)):
        idcg += D[r]
    if kk == n:                                  # no rank is clipped: the slot search (exact)
        slots = np.empty(N, dtype=np.int64)
        slot_search(ps, ns, D, 1.0 / idcg, slots)
        counts_from_slots(slots, counts)
    else:
        ndcg_counts_k(ps, ns, kk, D, idcg, counts)
    return kk, idcg


@njit(cache=True, nogil=True)
def counts_from_slots(slots, counts):
    """``counts[g]`` = #{j : slots[j] ≤ g}: the non-relevant candidates above relevant g when non-relevant j
    has ``slots[j]`` (non-decreasing) relevant ones above it."""
    j = 0
    N = slots.shape[0]
    for g in range(counts.shape[0]):
        while j < N and slots[j] <= g:
            j += 1
        counts[g] = j


@njit(cache=True, nogil=True)
def ndcg_query(scores, rel, order, lo, hi, k, D, coef):
    """Δ(ŷ) of one query for Δ = 1 − nDCG@k (k = −1: no cutoff); writes c(y*) − c(ŷ) into ``coef``."""
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    P = pi.shape[0]
    if P == 0 or ni.shape[0] == 0:
        coef[order[lo:hi]] = 0.0                 # no constraint: one class is empty
        return 0.0
    counts = np.empty(P, dtype=np.int64)
    kk, idcg = ndcg_solve(ps, ns, k, D, counts)
    dcg = 0.0
    for g in range(P):
        r = g + counts[g]
        if r < kk:
            dcg += D[r]
    pairwise_coef(pi, ni, counts, coef)
    return 1.0 - dcg / idcg


@njit(cache=True, nogil=True)
def ndcg_batch(scores, rel, order, offsets, k, D, deltas, coef):
    """NDCG@k (k = −1: SVM-NDCG-NC) batch violation, query after query."""
    for q in range(offsets.shape[0] - 1):
        deltas[q] = ndcg_query(scores, rel, order, offsets[q], offsets[q + 1], k, D, coef)


# ---------------------------------------------------------------------------------------------
# MRR (Chakrabarti et al. 2008 §3.6, Figure 3)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def mrr_delta(r, k):
    """Δ = 1 − RR@k when r non-relevant candidates precede the first relevant one (k = −1: no cutoff)."""
    if k >= 0 and r >= k:
        return 1.0
    return 1.0 - 1.0 / (1.0 + r)


@njit(cache=True, nogil=True)
def mrr_best_r(ps, ns, k):
    """r̂ = argmax_r H(r), H(r) = Δ(r) + Σ_{l<r} s_{b_l} − r·s_{g_min} for r = 0..|N| (Fact 3.5), the first
    maximum (r = 0, H = 0, unless some H(r) is strictly larger), as the tests' reference ``mrr_best_r``."""
    N = ns.shape[0]
    s_min = ps[ps.shape[0] - 1]                  # g_min: the last relevant in stable score order
    best = 0.0
    br = np.int64(0)                             # not a literal 0: mrr_delta compiles once
    pref = 0.0
    for r in range(1, N + 1):
        pref += ns[r - 1]
        h = mrr_delta(r, k) + pref - r * s_min
        if h > best:
            best = h
            br = r
    return br


@njit(cache=True, nogil=True)
def mrr_query(scores, rel, order, lo, hi, k, coef):
    """Δ(r̂) of one query; writes −1 for the r̂ best non-relevant candidates, r̂ for g_min, 0 elsewhere
    (r̂ from :func:`mrr_best_r`)."""
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    coef[order[lo:hi]] = 0.0
    if pi.shape[0] == 0 or ni.shape[0] == 0:
        return 0.0
    br = mrr_best_r(ps, ns, k)
    coef[ni[:br]] = -1.0
    coef[pi[-1]] = float(br)
    return mrr_delta(br, k)                      # 0 for r̂ = 0


@njit(cache=True, nogil=True)
def mrr_batch(scores, rel, order, offsets, k, deltas, coef):
    """MRR@k (k = −1: no cutoff) batch violation, query after query."""
    for q in range(offsets.shape[0] - 1):
        deltas[q] = mrr_query(scores, rel, order, offsets[q], offsets[q + 1], k, coef)


# ---------------------------------------------------------------------------------------------
# ROC (Joachims 2005; Chakrabarti et al. 2008 Eq. 8)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def roc_counts(scores, rel, order, lo, hi):
    """(relevant indices, non-relevant indices, non-relevant above each relevant) of one query's most violated
    ranking for the ROC-area loss: the classes merged by the keys s − ¼ (relevant) and s + ¼ (non-relevant), each
    class re-ordered by decreasing key, equal keys by candidate index (the stable sort of
    :meth:`.roc.ROCLoss.argmax`; distinct scores may share a key)."""
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    pk = ps - 0.25
    nk = ns + 0.25
    stable_runs(pi, pk)
    stable_runs(ni, nk)
    N = ni.shape[0]
    counts = np.empty(pi.shape[0], dtype=np.int64)
    b = 0
    for a in range(pi.shape[0]):
        while b < N and not (pk[a] > nk[b] or (pk[a] == nk[b] and pi[a] < ni[b])):
            b += 1
        counts[a] = b
    return pi, ni, counts


@njit(cache=True, nogil=True)
def roc_query(scores, rel, order, lo, hi, coef):
    """Δ(ŷ) of one query for the ROC-area loss (ŷ from :func:`roc_counts`); writes c(y*) − c(ŷ) into ``coef``."""
    pi, ni, counts = roc_counts(scores, rel, order, lo, hi)
    P = pi.shape[0]
    N = ni.shape[0]
    if P == 0 or N == 0:
        coef[order[lo:hi]] = 0.0                 # no constraint: one class is empty
        return 0.0
    pairwise_coef(pi, ni, counts, coef)
    return counts.sum() / (P * N)


@njit(cache=True, nogil=True)
def roc_batch(scores, rel, order, offsets, deltas, coef):
    """ROC-area batch violation, query after query."""
    for q in range(offsets.shape[0] - 1):
        deltas[q] = roc_query(scores, rel, order, offsets[q], offsets[q + 1], coef)


# ---------------------------------------------------------------------------------------------
# the classification baselines SVM_acc / SVM_acc2 (Yue et al. 2007 §5.2): no sort, one pass
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def classification_batch(scores, rel, offsets, fn_cost, n_bar, deltas, coef):
    """:meth:`.classification.ClassificationLoss.batch_violation` in one pass, bit for bit: a candidate
    with z·s < 1 (z = ±1 its class) is flipped, adds cost/n̄ to its query's Δ (in candidate order, as
    ``np.bincount`` sums) and gets c(z) − c(ŷ) = cost·z/n̄; the others get 0. ``fn_cost`` is the cost of
    a relevant candidate (a false negative), 1 that of the others."""
    for q in range(offsets.shape[0] - 1):
        acc = 0.0
        for d in range(offsets[q], offsets[q + 1]):
            z = 1.0 if rel[d] else -1.0
            cost = fn_cost if rel[d] else 1.0
            if z * scores[d] < 1.0:
                acc += cost / n_bar
                coef[d] = cost * z / n_bar
            else:
                coef[d] = 0.0
        deltas[q] = acc


# ---------------------------------------------------------------------------------------------
# single-query rankings: the public most_violated, from the solvers of the batch kernels above
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def merge_by_counts(pi, ni, counts, out):
    """The ranking where relevant g (in order) has ``counts[g]`` (non-decreasing) non-relevant candidates
    (in order) above it, into ``out``."""
    P = pi.shape[0]
    N = ni.shape[0]
    b = 0
    r = 0
    for g in range(P):
        while b < counts[g]:
            out[r] = ni[b]
            r += 1
            b += 1
        out[r] = pi[g]
        r += 1
    out[r:r + N - b] = ni[b:]


@njit(cache=True, nogil=True)
def merge_by_score(pi, ps, a, ni, ns, b, index_ties, out, r):
    """``out[r:]`` = relevant ``pi[a:]`` and non-relevant ``ni[b:]`` merged by decreasing score; equal
    scores by candidate index (``index_ties``) or relevant first."""
    P = pi.shape[0]
    N = ni.shape[0]
    while a < P or b < N:
        take_rel = b >= N
        if a < P and b < N:
            if ps[a] != ns[b]:
                take_rel = ps[a] > ns[b]
            else:
                take_rel = pi[a] < ni[b] if index_ties else True
        if take_rel:
            out[r] = pi[a]
            a += 1
        else:
            out[r] = ni[b]
            b += 1
        r += 1


@njit(cache=True, nogil=True)
def ranking_classes(scores, rel, order, lo, hi, out):
    """:func:`split_query` for a single-query ranking, and whether it is whole already: a query without a
    relevant or a non-relevant candidate is ranked by score into ``out`` (its only ranking)."""
    pi, ps, ni, ns = split_query(scores, rel, order, lo, hi)
    if pi.shape[0] == 0 or ni.shape[0] == 0:
        merge_by_score(pi, ps, 0, ni, ns, 0, True, out, 0)
        return pi, ps, ni, ns, True
    return pi, ps, ni, ns, False


@njit(cache=True, nogil=True)
def map_ranking(scores, rel, order, lo, hi, H, out):
    """The most violated ranking of one query for Δ = 1 − AP (Yue et al. 2007, Algorithm 2: the slots of
    :func:`._map_kernels.slot_search`), into ``out`` (candidate indices, best first)."""
    pi, ps, ni, ns, whole = ranking_classes(scores, rel, order, lo, hi, out)
    if whole:
        return
    slots = np.empty(ni.shape[0], dtype=np.int64)
    slot_search(ps, ns, H, 0.0, slots)
    counts = np.empty(pi.shape[0], dtype=np.int64)
    counts_from_slots(slots, counts)
    merge_by_counts(pi, ni, counts, out)


@njit(cache=True, nogil=True)
def ndcg_ranking(scores, rel, order, lo, hi, k, D, out):
    """The most violated ranking of one query for Δ = 1 − nDCG@k (:func:`ndcg_solve`), into ``out``."""
    pi, ps, ni, ns, whole = ranking_classes(scores, rel, order, lo, hi, out)
    if whole:
        return
    counts = np.empty(pi.shape[0], dtype=np.int64)
    ndcg_solve(ps, ns, k, D, counts)
    merge_by_counts(pi, ni, counts, out)


@njit(cache=True, nogil=True)
def mrr_ranking(scores, rel, order, lo, hi, k, out):
    """The most violated ranking of one query for Δ = 1 − RR@k: the r̂ best non-relevant candidates
    (:func:`mrr_best_r`), the lowest-scoring relevant one, then the others by decreasing score (equal
    scores: relevant first), as the reference ``mrr_argmax`` of the tests' oracles."""
    pi, ps, ni, ns, whole = ranking_classes(scores, rel, order, lo, hi, out)
    if whole:
        return
    P = pi.shape[0]
    br = mrr_best_r(ps, ns, k)
    out[:br] = ni[:br]
    out[br] = pi[P - 1]
    merge_by_score(pi[:P - 1], ps[:P - 1], 0, ni, ns, br, False, out, br + 1)


@njit(cache=True, nogil=True)
def roc_ranking(scores, rel, order, lo, hi, out):
    """The most violated ranking of one query for the ROC-area loss: the merge of :func:`roc_counts`."""
    pi, ni, counts = roc_counts(scores, rel, order, lo, hi)
    merge_by_counts(pi, ni, counts, out)
