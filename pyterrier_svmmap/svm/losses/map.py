"""Δ_map = 1 − AP with the pairwise joint feature map: SVM-map (Yue et al., SIGIR 2007).

Ψ(x, y) = 1/(|P|·|N|) Σ_{i∈P} Σ_{j∈N} y_ij (φ(x, d_i) − φ(x, d_j))            (§3, the combined
feature function), so the coefficient of a relevant document is (|N| − 2·a_i)/(|P||N|), a_i being the
number of non-relevant documents ranked above it, and that of a non-relevant document is
−(2·b_j − |P|)/(|P||N|), b_j being the number of relevant documents above it.

The most violated constraint is found by Algorithm 2: sort P and N by score (Observation 1), then give
every non-relevant document j the slot opt_j = argmax_k δ_j(k, |P|+1) (Eq. 5, 6, 13); Theorem 2 shows the
slots are non-decreasing in j, so the independent choices form a valid ranking.

The slot search (:func:`map_slots`, and the batch of :meth:`MAPLoss.batch_violation`) runs compiled
(:mod:`._map_kernels`), exact, in O((|P| + |N|) log |N|) per query instead of the paper's O(|P|·|N|). Two facts
make it fast. (i) The AP part of δ_j(k, |P|+1) has a closed form with
harmonic numbers H_n = Σ_{m≤n} 1/m: Σ_{i=k}^{|P|} [j/(j+i) − (j−1)/(j+i−1)]
= j/(j+|P|) − j/(j+k−1) + H_{j+|P|−1} − H_{j+k−2}, and the score part is a suffix sum, so any single
gain costs O(1). (ii) Every step δ_j(i, i+1) is non-increasing in j (both i/((j+i)(j+i−1)) and
s_j decrease as j grows), so gain differences δ_j(k) − δ_j(k') (k < k') are non-increasing in j: the
*first* maximiser of each row is non-decreasing (Theorem 2, made exact for ties). Divide and conquer
over non-relevant documents then finds the middle row's first maximiser over its admissible range and
recurses left / right on the two sub-ranges. The tests compare it with numpy reference implementations
(``tests/oracles/losses_reference.py``: the paper's Algorithm 2 as written, and the divide and conquer
vectorised across queries).
"""

from __future__ import annotations

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import Loss, sort_by_score  # noqa: F401  (sort_by_score re-exported)


def average_precision_of_ranking(ranking: np.ndarray, labels: np.ndarray) -> float:
    """AP of a ranking over the query's candidates (relevant = label > 0), 0 when none is relevant."""
    rel = np.asarray(labels)[ranking] > 0
    n_rel = int(rel.sum())
    if n_rel == 0:
        return 0.0
    hits = np.cumsum(rel)
    ranks = np.arange(1, len(rel) + 1)
    return float((hits[rel] / ranks[rel]).sum() / n_rel)


def pairwise_psi_coef(ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Coefficients of the normalised pairwise map Ψ (shared by the MAP, ROC and NDCG losses)."""
    labels = np.asarray(labels)
    rel_in_order = labels[ranking] > 0
    n_pos = int(rel_in_order.sum())
    n_neg = len(ranking) - n_pos
    coef = np.zeros(len(ranking))
    if n_pos == 0 or n_neg == 0:
        return coef
    neg_above = np.cumsum(~rel_in_order) - (~rel_in_order)
    pos_above = np.cumsum(rel_in_order) - rel_in_order
    in_order = np.where(rel_in_order, n_neg - 2.0 * neg_above, -(2.0 * pos_above - n_pos))
    coef[ranking] = in_order / (n_pos * n_neg)
    return coef


def interleave(pos_sorted: np.ndarray, neg_sorted: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Ranking from sorted relevant / non-relevant index lists and slots.

    ``slots[j]`` (0-based, in 0..|P|) is the number of relevant documents ranked above the j-th
    non-relevant one; ``slots`` must be non-decreasing.
    """
    n_pos = len(pos_sorted)
    key = np.concatenate([np.arange(n_pos, dtype=float), slots - 0.5])
    order = np.argsort(key, kind="stable")
    return np.concatenate([pos_sorted, neg_sorted])[order]


#: harmonic numbers H_0..H_n (H_0 = 0), grown on demand
_HARMONIC = np.zeros(1)


def harmonic(n: int) -> np.ndarray:
    """Table of H_0..H_m for some m ≥ n (shared, read-only)."""
    global _HARMONIC
    if len(_HARMONIC) <= n:
        m = max(n + 1, 2 * len(_HARMONIC), 1024)
        table = np.zeros(m)
        np.cumsum(1.0 / np.arange(1, m), out=table[1:])
        _HARMONIC = table
    return _HARMONIC


def map_slots(pos_scores: np.ndarray, neg_scores: np.ndarray) -> np.ndarray:
    """Algorithm 2, lines 5–7, for one query: given its relevant and non-relevant scores sorted descending,
    the optimal slot of each non-relevant document (0-based: the number of relevant documents ranked above
    it, the first maximiser of δ_j(·, |P|+1)), non-decreasing. Compiled (:func:`._map_kernels.slot_search`)."""
    pos_scores = np.asarray(pos_scores, dtype=float)
    neg_scores = np.asarray(neg_scores, dtype=float)
    if len(pos_scores) == 0 or len(neg_scores) == 0:
        return np.zeros(len(neg_scores), dtype=np.int64)
    slots = np.empty(len(neg_scores), dtype=np.int64)
    _numba.kernels("_map_kernels").slot_search(np.ascontiguousarray(pos_scores), np.ascontiguousarray(neg_scores),
                                               harmonic(len(pos_scores) + len(neg_scores) + 1), 0.0, slots)
    return slots


class MAPLoss(_numba.CompiledBatch, Loss):
    """Δ = 1 − AP(y) over the query's candidates; SVM-map's loss (Yue et al. 2007, §2 and §3.2)."""

    name = "map"
    psi_coef = staticmethod(pairwise_psi_coef)     # the normalised pairwise Ψ
    queries_within = True

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - average_precision_of_ranking(ranking, labels)

    def kernel_params(self, n: int) -> tuple:
        """The harmonic table of the slot search (:func:`harmonic`) for queries of at most ``n`` candidates: the
        parameter of the single-query argmax (:func:`._rank_kernels.map_ranking`, Algorithm 2) and of the batch."""
        return harmonic(n + 2),
