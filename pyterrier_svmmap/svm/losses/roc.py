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
with the other losses, then a merge of the two classes by key).
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

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


class ROCLoss(_numba.CompiledBatch, Loss):
    """Δ = 1 − ROC area (pairwise misorderings), pairwise Ψ; exact O(n log n) argmax."""

    name = "roc"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        return misordered_fraction(ranking, labels)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return pairwise_psi_coef(ranking, labels)

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

    def ranking_call(self, n: int) -> _numba.KernelCall:
        """The compiled single-query argmax (:func:`._rank_kernels.roc_ranking`)."""
        return _numba.kernels().roc_ranking, ()

    def kernel_call(self, n_max: int) -> _numba.KernelCall:
        """The compiled batch (:func:`._rank_kernels.roc_batch`)."""
        return _numba.kernels().roc_batch, ()
