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
:mod:`._rank_kernels` — the same DP when some rank is clipped (k < n), and for
no cutoff (k = None or k ≥ n) the slot search of Yue et al.'s Algorithm 2: with non-relevant j above
relevant i, Δ decomposes into steps (D(i+j−1) − D(i+j))/DCG*, which are non-increasing in j because D
is convex, so Theorem 2's monotone slots hold and each slot's gain is O(1) by telescoping
(:func:`._rank_kernels.ndcg_slots_nc`, O((|P| + |N|) log |N|) instead of O(|P|·|N|)). The single-query
argmax (:meth:`NDCGLoss.argmax`) runs the same kernels; the tests compare them with a numpy reference
implementation of the DP (``tests/oracles/losses_reference.py``).
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss
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


class NDCGLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − nDCG@k (binary gains; ``k=None``: no cutoff, SVM-NDCG-NC), pairwise Ψ, exact DP argmax."""

    name = "ndcg"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - ndcg_of_ranking(ranking, labels, self.k)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

    def ranking_call(self, n: int) -> _numba.KernelCall:
        """The compiled single-query argmax (:func:`._rank_kernels.ndcg_ranking`) for a query of ``n``
        candidates."""
        return _numba.kernels().ndcg_ranking, (_numba.as_int(self.k), kernel_discounts(n + 1))

    def kernel_call(self, n_max: int) -> _numba.KernelCall:
        """The compiled batch (:func:`._rank_kernels.ndcg_batch`) for queries of ≤ ``n_max`` candidates."""
        return _numba.kernels().ndcg_batch, (_numba.as_int(self.k), kernel_discounts(n_max + 1))
