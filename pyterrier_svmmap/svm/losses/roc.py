"""SVM-roc (Joachims 2005): Δ = the fraction of misordered pairs, with the pairwise Ψ (docs/losses.md)."""
from __future__ import annotations

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import Loss
from pyterrier_svmmap.svm.losses.map import pairwise_psi_coef


class ROCLoss(_numba.CompiledBatch, Loss):
    """Δ = 1 − ROC area (pairwise misorderings), pairwise Ψ; exact O(n log n) argmax."""

    name = "roc"
    psi_coef = staticmethod(pairwise_psi_coef)     # the normalised pairwise Ψ

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        rel = np.asarray(labels)[ranking] > 0      # the fraction of (relevant, non-relevant) pairs misordered
        n_pos = int(rel.sum())
        n_neg = len(rel) - n_pos
        if n_pos == 0 or n_neg == 0:
            return 0.0
        neg_above = np.cumsum(~rel) - (~rel)
        return float(neg_above[rel].sum()) / (n_pos * n_neg)

