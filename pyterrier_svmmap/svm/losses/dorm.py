"""DORM (Le & Smola 2007; Chakrabarti et al. 2008 §3.1.3, §3.5): NDCG loss with φ_dorm truncated at ``window``
(docs/losses.md)."""
from __future__ import annotations

from typing import Optional

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss, positions
from pyterrier_svmmap.svm.losses.ndcg import NDCGLoss, discounts


class DORMLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − nDCG@k, Ψ = φ_dorm with A(r) = 1/sqrt(1 + r) truncated at ``window``; assignment argmax."""

    name = "dorm"
    kernel_module = "_dorm_kernels"
    delta = NDCGLoss.delta                      # Δ = 1 − nDCG@k

    def __init__(self, k: Optional[int] = 10, window: Optional[int] = 100):
        super().__init__(k)
        if window is not None:
            window = int(window)
            if self.k is None:
                raise ValueError("DORM with k=None (no cutoff) needs window=None: every rank has a discount")
            if window < self.k:
                raise ValueError(f"window={window} must be at least k={self.k}")
        self.window = window

    def params(self) -> dict:
        return {"k": self.k, "window": self.window}

    def decay(self, n: int) -> np.ndarray:
        """A(r) for ranks r < n: 1/sqrt(1 + r), zero from ``window`` on."""
        a = 1.0 / np.sqrt(1.0 + np.arange(n))
        if self.window is not None:
            a[self.window:] = 0.0
        return a

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return self.decay(len(ranking))[positions(np.asarray(ranking))]

    def ideal_psi_coef(self, labels: np.ndarray) -> np.ndarray:
        rel = np.asarray(labels) > 0
        a = self.decay(len(rel))
        n_pos = int(rel.sum())
        coef = np.zeros(len(rel))
        if n_pos:
            coef[rel] = a[:n_pos].mean()
        if n_pos < len(rel):
            coef[~rel] = a[n_pos:].mean()
        return coef

    def kernel_params(self, n: int) -> tuple:
        return _numba.as_int(self.k), _numba.as_int(self.window), discounts(n + 1, None), self.decay(n + 1)
