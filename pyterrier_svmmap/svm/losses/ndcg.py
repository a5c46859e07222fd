"""SVM-NDCG (Chakrabarti et al. 2008, §3.4): Δ = 1 − nDCG@k with the pairwise Ψ (docs/losses.md)."""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import CutoffLoss
from pyterrier_svmmap.svm.losses.map import pairwise_psi_coef


@functools.lru_cache(maxsize=64)
def discount_table(n: int) -> np.ndarray:
    """D(r) = 1/log2(r + 2) for 0-based ranks r < n, without cutoff: the kernels' table (read-only, cached)."""
    d = 1.0 / np.log2(np.arange(n) + 2.0)
    d.setflags(write=False)
    return d


def discounts(n: int, k: Optional[int]) -> np.ndarray:
    """D(r) for 0-based ranks r < n: 1/log2(r + 2), zero from rank k on."""
    d = discount_table(n).copy()
    if k is not None:
        d[k:] = 0.0
    return d


class NDCGLoss(_numba.CompiledBatch, CutoffLoss):
    """Δ = 1 − nDCG@k (binary gains; ``k=None``: no cutoff, SVM-NDCG-NC), pairwise Ψ, exact DP argmax."""

    name = "ndcg"
    psi_coef = staticmethod(pairwise_psi_coef)     # the normalised pairwise Ψ

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        labels = np.asarray(labels)
        if not (labels > 0).any():
            return 0.0
        rel = labels[ranking] > 0                  # 1 − nDCG@k with binary gains
        n_pos, d = int(rel.sum()), discounts(len(rel), self.k)
        return 1.0 - (float(d[rel].sum() / d[:n_pos].sum()) if n_pos else 0.0)

    def kernel_params(self, n: int) -> tuple:
        return _numba.as_int(self.k), discount_table(n + 1)
