"""Reference implementations in numpy of the structural losses' compiled kernels (:mod:`pyterrier_svmmap.svm.losses`):
the oracles the tests compare the kernels with — each loss's exact single-query argmax and, for MAP, ROC, MRR and the
classification baselines, the vectorised batch violation. Functions of a loss take it as their first argument."""
from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from pyterrier_svmmap.queries import query_ids
from pyterrier_svmmap.svm.losses import ClassificationLoss, ComboLoss, DORMLoss, MAPLoss, MRRLoss, NDCGLoss, ROCLoss
from pyterrier_svmmap.svm.losses.combo import most_violated_member
from pyterrier_svmmap.svm.losses.base import sort_by_score
from pyterrier_svmmap.svm.losses.map import harmonic, interleave
from pyterrier_svmmap.svm.losses.ndcg import discounts

#: entries of the (non-relevant × relevant) gain table built at once; bounds memory on big queries
_CHUNK_ENTRIES = 1 << 22


def segment_exclusive_cumsum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Within each segment of ``offsets``, the sum of the earlier entries (0 for a segment's first)."""
    inc = np.cumsum(x)
    exc = inc - x
    start = np.concatenate([[0], inc])[offsets[:-1]]           # sum before each segment
    return exc - np.repeat(start, np.diff(offsets))


def split_by_relevance(scores, labels) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores as floats, relevant indices, non-relevant indices), each list by decreasing score.

    Yue et al. (2007) Observation 1: within each class the most violated ranking follows the scores, so
    the argmax searches only how the two sorted lists interleave.
    """
    scores = np.asarray(scores, dtype=float)
    rel = np.asarray(labels) > 0
    idx = np.arange(len(scores))
    return scores, sort_by_score(idx[rel], scores), sort_by_score(idx[~rel], scores)


# -- MAP ------------------------------------------------------------------------------------------
def map_slots_reference(pos_scores: np.ndarray, neg_scores: np.ndarray) -> np.ndarray:
    """Algorithm 2, lines 5–7: for sorted (descending) scores, the optimal slot of each non-relevant doc.

    Returns 0-based slots (number of relevant documents ranked above), non-decreasing.
    O(|P|·|N|) time, computed in chunks of non-relevant documents. The reference for
    :func:`~pyterrier_svmmap.svm.losses.map.map_slots` (tests and ``benchmarks/bench.py`` check they give rankings of
    equal H).
    """
    n_pos, n_neg = len(pos_scores), len(neg_scores)
    slots = np.empty(n_neg, dtype=np.int64)
    i = np.arange(1, n_pos + 1, dtype=float)[None, :]             # relevant index k (1-based)
    chunk = max(1, _CHUNK_ENTRIES // max(n_pos, 1))
    for start in range(0, n_neg, chunk):
        j = np.arange(start + 1, min(start + chunk, n_neg) + 1, dtype=float)[:, None]
        s_neg = neg_scores[start:start + chunk, None]
        # δ_j(k, k+1), Eq. (5)
        step = (j / (j + i) - (j - 1) / (j + i - 1)) / n_pos - 2.0 * (pos_scores[None, :] - s_neg) / (n_pos * n_neg)
        # δ_j(k, |P|+1) = Σ_{i=k}^{|P|} δ_j(i, i+1), Eq. (6); column |P| is the "stay below all" slot (0)
        gains = np.zeros((step.shape[0], n_pos + 1))
        gains[:, :n_pos] = np.cumsum(step[:, ::-1], axis=1)[:, ::-1]
        slots[start:start + chunk] = np.argmax(gains, axis=1)     # first maximum: keeps Theorem 2's order
    # Theorem 2 guarantees monotone slots; rounding in near-ties must not break the interleaving.
    return np.maximum.accumulate(slots) if n_neg else slots

#: a task whose (rows × slots) block has at most this many entries is solved in one go
_LEAF_ENTRIES = 8


def map_slots_batch(pos_scores: np.ndarray, pos_offsets: np.ndarray,
                    neg_scores: np.ndarray, neg_offsets: np.ndarray) -> np.ndarray:
    """Optimal slots of the non-relevant documents of many queries at once (exact: the divide and conquer
    described in :mod:`pyterrier_svmmap.svm.losses.map`, level by level, all queries at once).

    ``pos_scores[pos_offsets[q]:pos_offsets[q+1]]`` are query q's relevant scores sorted descending,
    likewise ``neg_scores`` / ``neg_offsets``; every query needs ≥ 1 relevant and ≥ 1 non-relevant
    document. Returns, per non-relevant document (concatenated like ``neg_scores``), its 0-based slot:
    the number of relevant documents above it, the first (highest) maximiser of δ_j(·, |P|+1).
    """
    pos_scores = np.asarray(pos_scores, dtype=float)
    neg_scores = np.asarray(neg_scores, dtype=float)
    pos_offsets = np.asarray(pos_offsets, dtype=np.int64)
    neg_offsets = np.asarray(neg_offsets, dtype=np.int64)
    n_q = len(pos_offsets) - 1
    P = np.diff(pos_offsets)
    N = np.diff(neg_offsets)
    slots = np.empty(len(neg_scores), dtype=np.int64)
    if n_q == 0 or len(neg_scores) == 0:
        return slots
    H = harmonic(int((P + N).max()) + 1)
    # relevant scores centred per query, so that one global cumsum keeps per-query precision:
    # suffix(t) = Σ_{i ≥ t} (s_i − m_q) = cs[end_q] − cs[start_q + t]
    mean = np.add.reduceat(pos_scores, pos_offsets[:-1]) / P
    centred = pos_scores - np.repeat(mean, P)
    cs = np.zeros(len(pos_scores) + 1)
    np.cumsum(centred, out=cs[1:])
    inv_p = 1.0 / P
    score_coef = 2.0 / (P * N)                     # 2/(|P||N|)
    # tasks: query, rows [jlo, jhi) (0-based non-relevant index), admissible slots [klo, khi]
    tq = np.arange(n_q)
    jlo = np.zeros(n_q, dtype=np.int64)
    jhi = N.copy()
    klo = np.zeros(n_q, dtype=np.int64)
    khi = P.copy()
    fill_start, fill_len, fill_val = [], [], []
    while len(tq):
        rows = jhi - jlo
        width = khi - klo + 1
        fixed = width == 1                          # only one admissible slot: the whole range takes it
        if fixed.any():
            fill_start.append(neg_offsets[tq[fixed]] + jlo[fixed])
            fill_len.append(rows[fixed])
            fill_val.append(klo[fixed])
            keep = ~fixed
            tq, jlo, jhi, klo, khi, rows, width = (a[keep] for a in (tq, jlo, jhi, klo, khi, rows, width))
            if not len(tq):
                break
        leaf = rows * width <= _LEAF_ENTRIES * (rows + width)
        # rows evaluated at this level: every row of a leaf task, the middle row of the others
        mid = (jlo + jhi) // 2
        r_count = np.where(leaf, rows, 1)
        r_first = np.where(leaf, jlo, mid)
        n_rows = int(r_count.sum())
        task_of_row = np.repeat(np.arange(len(tq)), r_count)
        row_start = np.cumsum(r_count) - r_count
        j0 = r_first[task_of_row] + (np.arange(n_rows) - row_start[task_of_row])   # 0-based row
        q_row = tq[task_of_row]
        w_row = width[task_of_row]
        # entries (row, slot t) for t in [klo, khi]
        total = int(w_row.sum())
        row_of = np.repeat(np.arange(n_rows), w_row)
        ent_start = np.cumsum(w_row) - w_row
        t = klo[task_of_row][row_of] + (np.arange(total) - ent_start[row_of])
        j = (j0 + 1)[row_of]                          # 1-based j
        q = q_row[row_of]
        s_j = neg_scores[neg_offsets[q_row] + j0] - mean[q_row]
        # δ_j(t+1, |P|+1) up to a row constant:
        #   −(j/(j+t) + H_{j+t−1})/|P| − 2/(|P||N|)·(Σ_{i≥t}(s_i − m) + t·(s_j − m))
        jt = j + t
        gain = -(j / jt + H[jt - 1]) * inv_p[q] \
            - score_coef[q] * ((cs[pos_offsets[q + 1]] - cs[pos_offsets[q] + t]) + t * s_j[row_of])
        best = np.maximum.reduceat(gain, ent_start)
        idx = np.where(gain >= best[row_of], np.arange(total), total)
        first = np.minimum.reduceat(idx, ent_start)
        opt = t[first]
        slots[neg_offsets[q_row] + j0] = opt
        # split the non-leaf tasks around their middle row's slot
        inner = ~leaf
        opt_task = np.zeros(len(tq), dtype=np.int64)
        opt_task[task_of_row] = opt                 # for non-leaf tasks, their single row
        left = inner & (jlo < mid)
        right = inner & (mid + 1 < jhi)
        tq = np.concatenate([tq[left], tq[right]])
        jlo, jhi, klo, khi = (np.concatenate([jlo[left], mid[right] + 1]),
                              np.concatenate([mid[left], jhi[right]]),
                              np.concatenate([klo[left], opt_task[right]]),
                              np.concatenate([opt_task[left], khi[right]]))
    if fill_start:
        start = np.concatenate(fill_start)
        length = np.concatenate(fill_len)
        val = np.concatenate(fill_val)
        total = int(length.sum())
        if total:
            seg = np.repeat(np.arange(len(start)), length)
            offs = np.arange(total) - (np.cumsum(length) - length)[seg]
            slots[start[seg] + offs] = val[seg]
    return slots

def query_class_order(scores: np.ndarray, labels: np.ndarray,
                      offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Candidate order by query, then relevant before non-relevant, then decreasing score; and the
    number of relevant candidates per query.

    One (SIMD) quicksort of all scores, then a stable radix sort of the small integer key
    2·query + non-relevant (the stable pass keeps the score order within each group); lexsort when
    there are too many queries for a 16-bit key.
    """
    rel = np.asarray(labels) > 0
    n_q = len(offsets) - 1
    qid = query_ids(offsets)
    n_pos = np.bincount(qid, weights=rel, minlength=n_q).astype(np.int64)
    if 2 * n_q <= np.iinfo(np.uint16).max:
        by_score = np.argsort(-scores)
        key = (2 * qid + ~rel).astype(np.uint16)[by_score]
        order = by_score[np.argsort(key, kind="stable")]
    else:
        order = np.lexsort((-scores, ~rel, qid))
    return order, n_pos

def map_batch_violation(scores: np.ndarray, labels: np.ndarray,
                              offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """:meth:`MAPLoss.batch_violation` in vectorised numpy: one sort, one slot search for all queries."""
    scores = np.asarray(scores, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    rel = np.asarray(labels) > 0
    n_q = len(offsets) - 1
    sizes = np.diff(offsets)
    qid = query_ids(offsets)
    deltas = np.zeros(n_q)
    coef = np.zeros(len(scores))
    P = np.bincount(qid, weights=rel, minlength=n_q).astype(np.int64)
    N = sizes - P
    ok = (P > 0) & (N > 0)
    if not ok.any():
        return deltas, coef
    order, _ = query_class_order(scores, labels, offsets)
    use = ok[qid[order]]
    order = order[use]
    ro = rel[order]
    pos, neg = order[ro], order[~ro]
    Pk, Nk = P[ok], N[ok]
    pos_off = np.concatenate([[0], np.cumsum(Pk)])
    neg_off = np.concatenate([[0], np.cumsum(Nk)])
    slots = map_slots_batch(scores[pos], pos_off, scores[neg], neg_off)
    qk = np.repeat(np.arange(len(Pk)), Nk)
    # non-relevant at or above slot t, per query: histogram of slots, cumulated within the query
    cnt = np.bincount(pos_off[qk] + qk + slots, minlength=int(pos_off[-1] + len(Pk)))
    cum = np.cumsum(cnt)
    starts = pos_off[:-1] + np.arange(len(Pk))                         # query k's cells: starts[k] + t
    base = np.concatenate([[0], cum])[starts]                          # count before the query's cells
    qp = np.repeat(np.arange(len(Pk)), Pk)
    i = np.arange(len(pos)) - pos_off[qp]                              # 0-based index among relevant
    above = cum[starts[qp] + i] - base[qp]
    norm = 2.0 / (Pk * Nk)
    coef[pos] = norm[qp] * above
    coef[neg] = -norm[qk] * (Pk[qk] - slots)
    ap = np.bincount(qp, weights=(i + 1.0) / (i + 1.0 + above), minlength=len(Pk)) / Pk
    deltas[ok] = 1.0 - ap
    return deltas, coef

def map_argmax(loss: MAPLoss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Algorithm 2 for one query: stable sorts, the vectorised slot search (:func:`map_slots_batch`),
    :func:`~pyterrier_svmmap.svm.losses.map.interleave`."""
    scores, pos, neg = split_by_relevance(scores, labels)
    if len(pos) == 0 or len(neg) == 0:
        return np.concatenate([pos, neg])
    slots = map_slots_batch(scores[pos], np.array([0, len(pos)]), scores[neg], np.array([0, len(neg)]))
    return interleave(pos, neg, slots)


# -- ROC -------------------------------------------------------------------------------------------
def roc_argmax(loss: ROCLoss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The exact argmax in numpy (a stable sort by key): the reference of ``ROCLoss.argmax``."""
    scores = np.asarray(scores, dtype=float)
    rel = np.asarray(labels) > 0
    key = np.where(rel, scores - 0.25, scores + 0.25)
    # ties between a relevant and a non-relevant key (d_ij = ½) may go either way: both are optimal
    return np.argsort(-key, kind="stable")


def roc_batch_violation(loss: ROCLoss, scores: np.ndarray, labels: np.ndarray,
                          offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``ROCLoss.violation`` for all queries at once: one lexsort by (query, key), segment counts."""
    scores = np.asarray(scores, dtype=float)
    rel_all = np.asarray(labels) > 0
    offsets = np.asarray(offsets, dtype=np.int64)
    n_q = len(offsets) - 1
    qid = query_ids(offsets)
    key = np.where(rel_all, scores - 0.25, scores + 0.25)
    order = np.lexsort((-key, qid))                  # by query, then decreasing key (stable)
    rel = rel_all[order]
    n_pos = np.bincount(qid, weights=rel_all, minlength=n_q)
    n_neg = np.diff(offsets) - n_pos
    pairs = n_pos * n_neg
    safe = np.where(pairs > 0, pairs, 1.0)
    neg_above = segment_exclusive_cumsum((~rel).astype(float), offsets)
    pos_above = segment_exclusive_cumsum(rel.astype(float), offsets)
    norm = np.where(pairs > 0, 2.0 / safe, 0.0)[qid]
    coef = np.empty(len(scores))
    coef[order] = np.where(rel, norm * neg_above, -norm * (n_pos[qid] - pos_above))
    deltas = np.bincount(qid, weights=np.where(rel, neg_above, 0.0), minlength=n_q) / safe
    return np.where(pairs > 0, deltas, 0.0), coef


# -- MRR -------------------------------------------------------------------------------------------
def mrr_best_r(loss: MRRLoss, neg_scores: np.ndarray, s_gmin: float) -> int:
    """r̂ = argmax_r H(r), H(r) = Δ(r) + Σ_{l<r} s_{b_l} − r·s_{g_min} for r = 0..|N| (Fact 3.5), the first
    maximum."""
    r = np.arange(len(neg_scores) + 1)
    delta = 1.0 - 1.0 / (1.0 + r)
    if loss.k is not None:
        delta[r >= loss.k] = 1.0
    h = delta + np.concatenate([[0.0], np.cumsum(neg_scores)]) - r * s_gmin
    return int(np.argmax(h))


def mrr_argmax(loss: MRRLoss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The exact argmax in numpy: the reference of ``MRRLoss.argmax``."""
    scores, pos, neg = split_by_relevance(scores, labels)
    if len(pos) == 0 or len(neg) == 0:
        return np.concatenate([pos, neg])
    r = mrr_best_r(loss, scores[neg], scores[pos[-1]])
    # top r bad, then g_min, then the rest in score order (immaterial to Δ and Ψ)
    rest = np.concatenate([pos[:-1], neg[r:]])
    rest = rest[np.argsort(-scores[rest], kind="stable")]
    return np.concatenate([neg[:r], pos[-1:], rest])


def mrr_batch_violation(loss: MRRLoss, scores: np.ndarray, labels: np.ndarray,
                          offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """:meth:`MRRLoss.violation` for all queries at once, vectorised numpy.

    One lexsort puts each query's bad candidates first, by decreasing score; bad candidate number t
    (0-based) then stands for r = t + 1, with H(r) = Δ(r) + Σ_{l ≤ t} s_{b_l} − (t + 1)·s_{g_min};
    r = 0 (H = 0) wins unless some H(r) is strictly larger, as in :func:`mrr_best_r`.
    """
    scores = np.asarray(scores, dtype=float)
    rel_all = np.asarray(labels) > 0
    offsets = np.asarray(offsets, dtype=np.int64)
    n_q = len(offsets) - 1
    sizes = np.diff(offsets)
    qid = query_ids(offsets)
    n_pos = np.bincount(qid, weights=rel_all, minlength=n_q).astype(np.int64)
    ok = (n_pos > 0) & (n_pos < sizes)
    g_min_score = np.full(n_q, np.inf)
    np.minimum.at(g_min_score, qid[rel_all], scores[rel_all])
    g_min = np.full(n_q, -1)
    # the lowest-scoring relevant candidate (the last in stable decreasing-score order)
    order_rel = np.lexsort((-np.arange(len(scores)), scores, ~rel_all, qid))
    first_in_q = offsets[:-1]
    g_min[ok] = order_rel[first_in_q[ok]]
    g_min_score = np.where(ok, g_min_score, 0.0)
    # bad candidates of each query, by decreasing score (stable)
    order = np.lexsort((-scores, rel_all, qid))
    bad = ~rel_all[order]
    t = segment_exclusive_cumsum(bad.astype(float), offsets)            # index among the bad ones
    pref = segment_exclusive_cumsum(np.where(bad, scores[order], 0.0), offsets) + scores[order]
    r = t + 1
    d = 1.0 - 1.0 / (1.0 + r)
    if loss.k is not None:
        d[r >= loss.k] = 1.0
    h = np.where(bad & ok[qid], d + pref - r * g_min_score[qid], -np.inf)
    best = np.full(n_q, -np.inf)
    np.maximum.at(best, qid, h)
    # the first position attaining the query's best H (ties: the smallest r, as np.argmax does)
    hit = (h == best[qid]) & (best[qid] > 0.0)
    pos_hit = np.where(hit, np.arange(len(h)), len(h))
    first_hit = np.full(n_q, len(h))
    np.minimum.at(first_hit, qid, pos_hit)
    r_hat = np.where(first_hit < len(h), t[np.minimum(first_hit, len(h) - 1)] + 1, 0).astype(np.int64)
    r_hat[~ok] = 0
    coef = np.zeros(len(scores))
    take = bad & (t < r_hat[qid])
    coef[order[take]] = -1.0
    coef[g_min[ok]] = r_hat[ok].astype(float)
    deltas = np.where(r_hat > 0, 1.0 - 1.0 / (1.0 + r_hat), 0.0)
    if loss.k is not None:
        deltas[r_hat >= loss.k] = 1.0
    deltas[~ok] = 0.0
    return deltas, coef


# -- NDCG ------------------------------------------------------------------------------------------
def merge_by_counts(pos_sorted: np.ndarray, neg_sorted: np.ndarray, neg_above: np.ndarray) -> np.ndarray:
    """Ranking from sorted good / bad lists and, per good one, the (non-decreasing) count of bad above it."""
    key = np.concatenate([neg_above - 0.5, np.arange(len(neg_sorted), dtype=float)])
    return np.concatenate([pos_sorted, neg_sorted])[np.argsort(key, kind="stable")]


def ndcg_counts(pos_scores: np.ndarray, neg_scores: np.ndarray, k: Optional[int]) -> Tuple[np.ndarray, float]:
    """Exact argmax of H for score-sorted (descending) good and bad scores.

    Returns (a, H*) with a[g] the number of bad candidates above the g-th good one.
    """
    n_pos, n_neg = len(pos_scores), len(neg_scores)
    n = n_pos + n_neg
    kk = n if k is None else min(int(k), n)
    norm = 1.0 / (n_pos * n_neg)
    disc = discounts(n, kk)
    idcg = disc[:n_pos].sum()
    pref_b = np.concatenate([[0.0], np.cumsum(neg_scores)])        # Σ_{l<a} s_{b_l}
    tot_b = pref_b[-1]
    pref_g = np.concatenate([[0.0], np.cumsum(pos_scores)])
    # a*_g: bad candidates scoring strictly above s_g (the smallest maximiser of the concave CellScore)
    a_star = np.searchsorted(-neg_scores, -pos_scores, side="left")

    def cell_score(g, a):
        return norm * (2.0 * pref_b[a] - tot_b + (n_neg - 2.0 * a) * pos_scores[g])

    # cs_star[g] = Σ_{h ≥ g} CellScore(h, a*_h)
    cs_opt = cell_score(np.arange(n_pos), a_star)
    suf_opt = np.concatenate([np.cumsum(cs_opt[::-1])[::-1], [0.0]])

    def tail(g0: int) -> float:
        """Σ_{h ≥ g0} CellScore(h, max(a*_h, m)) with m = k − g0; −inf if m > |N|."""
        m = kk - g0
        if m > n_neg:
            return -math.inf
        m = max(m, 0)
        cut = g0 + int(np.searchsorted(a_star[g0:], m, side="left"))   # rows g0..cut−1 have a*_h < m
        cnt = cut - g0
        low = norm * (cnt * (2.0 * pref_b[m] - tot_b) + (n_neg - 2.0 * m) * (pref_g[cut] - pref_g[g0]))
        return float(low + suf_opt[cut])

    rows = min(n_pos, kk)
    best_val, best_g0 = tail(0), 0
    back = []                       # back[g][a] = argmax_{p ≤ a} T[g−1, p]
    prev_run = None                 # running maximum of row g − 1 and where it is attained
    prev_arg = None
    tables = []
    for g in range(rows):
        width = min(n_neg, kk - 1 - g) + 1      # columns a = 0 .. min(|N|, k − 1 − g)
        if width <= 0:
            break
        a = np.arange(width)
        v = cell_score(g, a) - disc[g + a] / idcg
        if g == 0:
            row = v
            back.append(None)
        else:
            row = v + prev_run[:width]
            back.append(prev_arg[:width])
        tables.append(row)
        prev_arg = _running_argmax(row)
        prev_run = row[prev_arg]
        # candidate: rows 0..g in the table, first clipped row g + 1
        cand = float(prev_run[-1]) + (tail(g + 1) if g + 1 < n_pos else 0.0)
        if cand > best_val:
            best_val, best_g0 = cand, g + 1
    counts = np.empty(n_pos, dtype=np.int64)
    if best_g0 < n_pos:
        counts[best_g0:] = np.maximum(a_star[best_g0:], max(kk - best_g0, 0))
    if best_g0 > 0:
        col = int(_running_argmax(tables[best_g0 - 1])[-1])
        for g in range(best_g0 - 1, -1, -1):
            counts[g] = col
            if g > 0:
                col = int(back[g][col])
    return counts, 1.0 + best_val


def _running_argmax(row: np.ndarray) -> np.ndarray:
    """Index of the maximum of row[:a + 1], for every a (ties: the last column attaining it)."""
    idx = np.arange(len(row))
    best = np.maximum.accumulate(row)
    is_new = row >= best                     # positions where the running maximum is attained
    return np.maximum.accumulate(np.where(is_new, idx, 0))


def ndcg_argmax(loss: NDCGLoss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The exact argmax in numpy (:func:`ndcg_counts`): the reference of ``NDCGLoss.argmax``."""
    scores, pos, neg = split_by_relevance(scores, labels)
    if len(pos) == 0 or len(neg) == 0:
        return np.concatenate([pos, neg])
    counts, _ = ndcg_counts(scores[pos], scores[neg], loss.k)
    return merge_by_counts(pos, neg, counts)


# -- DORM ------------------------------------------------------------------------------------------
def dorm_argmax(loss: DORMLoss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The exact argmax by an assignment (scipy): the reference of ``DORMLoss.argmax``."""
    scores = np.asarray(scores, dtype=float)
    rel = np.asarray(labels) > 0
    n = len(scores)
    n_pos = int(rel.sum())
    if n_pos == 0 or n_pos == n:
        return np.argsort(-scores, kind="stable")
    m = n if loss.window is None else min(loss.window, n)
    idx = np.arange(n)
    cand = np.concatenate([sort_by_score(idx[rel], scores)[:m], sort_by_score(idx[~rel], scores)[:m]])
    disc = discounts(n, loss.k)
    idcg = disc[:n_pos].sum()
    a = loss.decay(m)
    weight = scores[cand, None] * a[None, :] - rel[cand, None] * (disc[None, :m] / idcg)
    row, col = linear_sum_assignment(weight, maximize=True)
    top = cand[row[np.argsort(col)]]
    placed = np.zeros(n, dtype=bool)
    placed[top] = True
    rest = idx[~placed]
    return np.concatenate([top, rest[np.argsort(-scores[rest], kind="stable")]])


# -- the classification baselines -------------------------------------------------------------------
def classification_batch_violation(loss: ClassificationLoss, scores: np.ndarray, labels: np.ndarray,
                          offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``ClassificationLoss.batch_violation`` vectorised in numpy."""
    scores = np.asarray(scores, dtype=float)
    rel = np.asarray(labels) > 0
    offsets = np.asarray(offsets, dtype=np.int64)
    n_bar = len(scores) / (len(offsets) - 1)
    cost = loss._costs(rel)
    z = np.where(rel, 1.0, -1.0)
    flipped = z * scores < 1.0
    per_cand = np.where(flipped, cost, 0.0) / n_bar
    qid = query_ids(offsets)
    deltas = np.bincount(qid, weights=per_cand, minlength=len(offsets) - 1)
    # c(z) − c(ŷ) = cost·(z − ŷ)/(2n̄) = cost·z/n̄ on flipped candidates
    coef = np.where(flipped, cost * z, 0.0) / n_bar
    return deltas, coef


# -- any loss --------------------------------------------------------------------------------------
def argmax_reference(loss, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The reference argmax of ``loss`` for one query (a combo: that of its most violated member, by the
    members' per-query violations)."""
    if isinstance(loss, ComboLoss):
        s = np.asarray(scores, dtype=float)
        found = [member.violation(s, labels) for member in loss.losses]
        best = int(most_violated_member(np.array([[d - float(c @ s)] for d, c in found]))[0])
        return argmax_reference(loss.losses[best], scores, labels)
    for kind, argmax in ((MAPLoss, map_argmax), (ROCLoss, roc_argmax), (MRRLoss, mrr_argmax), (NDCGLoss, ndcg_argmax),
                         (DORMLoss, dorm_argmax)):
        if isinstance(loss, kind):
            return argmax(loss, scores, labels)
    return loss.argmax(scores, labels)                       # no kernel: the loss's own argmax


def batch_violation_reference(loss, scores: np.ndarray, labels: np.ndarray,
                              offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The vectorised numpy batch violation of ``loss`` (MAP, ROC, MRR, the classification baselines)."""
    if isinstance(loss, MAPLoss):
        return map_batch_violation(scores, labels, offsets)
    if isinstance(loss, ROCLoss):
        return roc_batch_violation(loss, scores, labels, offsets)
    if isinstance(loss, MRRLoss):
        return mrr_batch_violation(loss, scores, labels, offsets)
    if isinstance(loss, ClassificationLoss):
        return classification_batch_violation(loss, scores, labels, offsets)
    raise TypeError(f"no vectorised numpy reference for {loss!r}")
