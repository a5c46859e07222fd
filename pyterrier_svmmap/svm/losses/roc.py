"""Δ_roc = fraction of misordered (relevant, non-relevant) pairs: SVM-roc (Joachims, ICML 2005).

Also SVM_roc^Δ of Yue et al. (2007) §5 and SVM_AUC of Chakrabarti et al. (2008) §3.3. The joint feature
map is the pairwise φ_po of Chakrabarti et al. Eq. (3) (:func:`~.map.pairwise_psi_coef`), the loss their
Eq. (7), Δ = 1/(|P||N|) Σ_{i∈P, j∈N} [y_ij = −1].

Most violated constraint (their Eq. 8): with d_ij = s_i − s_j,
H(y) = 1/(|P||N|) Σ_ij h_ij(y_ij) with h_ij(+1) = d_ij and h_ij(−1) = 1 − d_ij, so every pair can be
chosen on its own: flip (y_ij = −1) iff d_ij < ½ (either choice when d_ij = ½). These choices are
consistent with one total order: sort all candidates by the key s_i − ¼ (relevant) and s_j + ¼
(non-relevant); i precedes j iff s_i − ¼ > s_j + ¼ iff d_ij > ½. Sorting is O(n log n), and Δ and Ψ
are counted from the sorted order, as in Joachims (2005)'s algorithm.

:meth:`ROCLoss.batch_violation` runs the compiled :func:`._rank_kernels.roc_batch` (one score sort shared
with the other losses, then a merge of the two classes by key) when numba is available, else the
vectorised numpy :meth:`ROCLoss.batch_violation_numpy`.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from pyterrier_svmmap.queries import query_ids
import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import Loss
from pyterrier_svmmap.svm.losses.map import pairwise_psi_coef


def misordered_fraction(ranking: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of (relevant, non-relevant) pairs in which the non-relevant candidate ranks first."""
    rel = np.asarray(labels)[ranking] > 0
    n_pos = int(rel.sum())
    n_neg = len(rel) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.0
    neg_above = np.cumsum(~rel) - (~rel)
    return float(neg_above[rel].sum()) / (n_pos * n_neg)


def segment_exclusive_cumsum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Within each segment of ``offsets``, the sum of the earlier entries (0 for a segment's first)."""
    inc = np.cumsum(x)
    exc = inc - x
    start = np.concatenate([[0], inc])[offsets[:-1]]           # sum before each segment
    return exc - np.repeat(start, np.diff(offsets))


class ROCLoss(_numba.CompiledBatch, Loss):
    """Δ = 1 − ROC area (pairwise misorderings), pairwise Ψ; exact O(n log n) argmax."""

    name = "roc"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        return misordered_fraction(ranking, labels)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

    def argmax_reference(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The exact argmax in numpy (a stable sort by key): the reference of the compiled :meth:`argmax`."""
        scores = np.asarray(scores, dtype=float)
        rel = np.asarray(labels) > 0
        key = np.where(rel, scores - 0.25, scores + 0.25)
        # ties between a relevant and a non-relevant key (d_ij = ½) may go either way: both are optimal
        return np.argsort(-key, kind="stable")

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        """Δ(ŷ) and c(y*) − c(ŷ) = 2/(|P||N|)·(a_i for relevant i, −(relevant below j) for non-relevant j)."""
        labels = np.asarray(labels)
        y_hat = self.argmax(scores, labels)
        rel = labels[y_hat] > 0
        n_pos = int(rel.sum())
        n_neg = len(rel) - n_pos
        coef = np.zeros(len(y_hat))
        if n_pos == 0 or n_neg == 0:
            return 0.0, coef
        neg_above = np.cumsum(~rel) - (~rel)
        pos_below = n_pos - (np.cumsum(rel) - rel)
        norm = 2.0 / (n_pos * n_neg)
        coef[y_hat] = np.where(rel, norm * neg_above, -norm * pos_below)
        return float(neg_above[rel].sum()) / (n_pos * n_neg), coef

    def batch_violation_fallback(self, scores: np.ndarray, labels: np.ndarray,
                                 offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Without numba: :meth:`batch_violation_numpy`."""
        return self.batch_violation_numpy(scores, labels, offsets)

    def ranking_call(self, n: int) -> Optional[_numba.KernelCall]:
        """The compiled single-query argmax (:func:`._rank_kernels.roc_ranking`), or None without numba."""
        jit = _numba.kernels()
        return None if jit is None else (jit.roc_ranking, ())

    def kernel_call(self, n_max: int) -> Optional[_numba.KernelCall]:
        """The compiled batch (:func:`._rank_kernels.roc_batch`), or None without numba."""
        jit = _numba.kernels()
        return None if jit is None else (jit.roc_batch, ())

    def batch_violation_numpy(self, scores: np.ndarray, labels: np.ndarray,
                              offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`violation` for all queries at once: one lexsort by (query, key), segment counts."""
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
