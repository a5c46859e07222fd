"""Δ_ndcg = 1 − nDCG@k with the pairwise joint feature map: SVM-NDCG (Chakrabarti et al., KDD 2008, §3.4).

nDCG follows ir_measures/trec_eval: binary gains, discount D(r) = 1/log2(r + 2) for a 0-based rank
r < k (1/log2(rank + 1) with ranks from 1), 0 from rank k on; the ideal DCG puts the query's |P| relevant
candidates on top, DCG* = Σ_{r < min(|P|, k)} D(r). ``k=None`` is SVM-NDCG-NC ("no clip", end of §3.4).
(Chakrabarti et al.'s own Discount gives ranks 0 and 1 the same weight; we follow ir_measures so that Δ
is exactly 1 − the measure that is reported.)

Ψ is φ_po (Eq. 3), so wᵀΨ = F(y) = 1/(|P||N|) Σ_{i∈P, j∈N} y_ij (s_i − s_j).

Most violated constraint. Fact 3.2 (good and bad candidates each stay in score order) holds for
NDCG with binary gains, so a ranking is given by a_g = number of bad candidates above the g-th best
good one, non-decreasing in g, and (Figure 2)

    H = 1 + Σ_g v(g, a_g),   v(g, a) = CellScore(g, a) + CellLoss(g, a),
    CellScore(g, a) = (Σ_{l<a} (s_{b_l} − s_g) + Σ_{l≥a} (s_g − s_{b_l})) / (|P||N|),
    CellLoss(g, a) = −D(g + a)/DCG*.

We solve it exactly with the reduced table of Facts 3.3/3.4, made precise as follows. Call row g
*clipped* once g + a_g ≥ k: its CellLoss is 0, and since a is non-decreasing so are all later rows.
Let g' be the first clipped row. Rows g < g' live in the table T[g, a], a ≤ k − 1 − g (at most
k × k cells), filled by T[g, a] = v(g, a) + max_{p ≤ a} T[g − 1, p] (a running maximum: O(k²) in all,
Fact 3.4). Rows g ≥ g' only see CellScore, which is concave in a and maximal at
a*_g = #{bad with score > s_g}, non-decreasing in g; their constraint is a_g ≥ k − g' (≥ a_{g'−1}),
so the optimum is a_g = max(a*_g, k − g') and its value Tail(g') takes O(log n) with prefix sums
(Fact 3.3's folded column). H* = 1 + max_{g'} (max_a T[g' − 1, a] + Tail(g')). O(n log n + k²) per query.

Batch (:meth:`NDCGLoss.batch_violation`, what the solver calls): the compiled kernels of
:mod:`._rank_kernels` when numba is available — the same DP when some rank is clipped (k < n), and for
no cutoff (k = None or k ≥ n) the slot search of Yue et al.'s Algorithm 2: with non-relevant j above
relevant i, Δ decomposes into steps (D(i+j−1) − D(i+j))/DCG*, which are non-increasing in j because D
is convex, so Theorem 2's monotone slots hold and each slot's gain is O(1) by telescoping
(:func:`._rank_kernels.ndcg_slots_nc`, O((|P| + |N|) log |N|) instead of O(|P|·|N|)). Without numba, the
per-query code of this module (the reference of ``tests/test_losses_fast.py``).
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Tuple

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss, split_by_relevance
from pyterrier_svmmap.svm.losses.map import pairwise_psi_coef


def discount_table(n: int) -> np.ndarray:
    """D(r) = 1/log2(r + 2) for 0-based ranks r < n, without cutoff (the kernels' table)."""
    return 1.0 / np.log2(np.arange(n) + 2.0)


@functools.lru_cache(maxsize=64)
def kernel_discounts(n: int) -> np.ndarray:
    """:func:`discount_table` of length ``n``, read-only and kept for the next call of the same length (the
    kernels' table; the same values, computed once)."""
    d = discount_table(n)
    d.setflags(write=False)
    return d


def discounts(n: int, k: Optional[int]) -> np.ndarray:
    """D(r) for 0-based ranks r < n: 1/log2(r + 2), zero from rank k on."""
    d = discount_table(n)
    if k is not None:
        d[k:] = 0.0
    return d


def ndcg_of_ranking(ranking: np.ndarray, labels: np.ndarray, k: Optional[int] = None) -> float:
    """nDCG@k of a ranking with binary gains (label > 0), 0 when nothing is relevant."""
    rel = np.asarray(labels)[ranking] > 0
    n_pos = int(rel.sum())
    if n_pos == 0:
        return 0.0
    d = discounts(len(rel), k)
    return float(d[rel].sum() / d[:n_pos].sum())


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


class NDCGLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − nDCG@k (binary gains; ``k=None``: no cutoff, SVM-NDCG-NC), pairwise Ψ, exact DP argmax."""

    name = "ndcg"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - ndcg_of_ranking(ranking, labels, self.k)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

    def argmax_reference(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The exact argmax in numpy (:func:`ndcg_counts`): the reference of the compiled :meth:`argmax`."""
        scores, pos, neg = split_by_relevance(scores, labels)
        if len(pos) == 0 or len(neg) == 0:
            return np.concatenate([pos, neg])
        counts, _ = ndcg_counts(scores[pos], scores[neg], self.k)
        return merge_by_counts(pos, neg, counts)

    def ranking_call(self, n: int) -> Optional[_numba.KernelCall]:
        """The compiled single-query argmax (:func:`._rank_kernels.ndcg_ranking`) for a query of ``n``
        candidates, or None without numba."""
        jit = _numba.kernels()
        return None if jit is None else (jit.ndcg_ranking, (_numba.as_int(self.k), kernel_discounts(n + 1)))

    def kernel_call(self, n_max: int) -> Optional[_numba.KernelCall]:
        """The compiled batch (:func:`._rank_kernels.ndcg_batch`) for queries of ≤ ``n_max`` candidates,
        or None without numba."""
        jit = _numba.kernels()
        if jit is None:
            return None
        return jit.ndcg_batch, (_numba.as_int(self.k), kernel_discounts(n_max + 1))
