"""SVM-MRR (Chakrabarti et al. 2008, §3.1.2 and §3.6): Δ = 1 − RR@k with φ_mrr (docs/losses.md)."""
from __future__ import annotations

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss


class MRRLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − RR@k, Ψ = φ_mrr (Chakrabarti et al. Eq. 5), exact argmax of their Figure 3."""

    name = "mrr"

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        labels = np.asarray(labels)
        if not (labels > 0).any():
            return 0.0
        rel = labels[ranking] > 0
        if not rel.any():
            return 1.0
        r = int(np.argmax(rel))                    # the 0-based rank of the first relevant candidate
        return 1.0 if self.k is not None and r >= self.k else 1.0 - 1.0 / (1 + r)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        ranking = np.asarray(ranking)
        rel = np.asarray(labels)[ranking] > 0
        coef = np.zeros(len(ranking))
        if not rel.any():
            return coef
        r = int(np.argmax(rel))
        coef[ranking[:r]] = 1.0
        coef[ranking[r]] = -float(r)
        return coef

    def ideal_psi_coef(self, labels: np.ndarray) -> np.ndarray:
        return np.zeros(len(labels))

    def kernel_params(self, n: int) -> tuple:
        return _numba.as_int(self.k),
