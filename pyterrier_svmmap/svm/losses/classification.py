"""Yue et al. (2007) §5.2's classification baselines SVM_acc and SVM_acc2 as structural losses (docs/losses.md)."""
from __future__ import annotations

from typing import Tuple, Union

import numpy as np

from pyterrier_svmmap.features.matrices import DenseBlock, FeatureMatrix
import pyterrier_svmmap.svm.losses._numba as _numba
import pyterrier_svmmap.threads as threads
from pyterrier_svmmap.svm.losses.base import Loss


def add_bias(X: FeatureMatrix) -> FeatureMatrix:
    """φ with a constant feature 1 appended (last dimension): its weight is the classifier's bias."""
    return FeatureMatrix(list(X.blocks) + [DenseBlock(np.ones((X.n_rows, 1)))])


class ClassificationLoss(Loss):
    """Weighted Hamming loss on boolean labellings; ``fn_cost``, a false negative's cost (1.0: SVM_acc; SVM_acc2:
    ``"balanced"`` or a number)."""

    name = "acc"
    needs_bias = True

    def __init__(self, fn_cost: Union[float, str] = 1.0):
        if not (fn_cost == "balanced" or (isinstance(fn_cost, (int, float)) and fn_cost > 0)):
            raise ValueError(f"fn_cost must be a positive number or 'balanced', got {fn_cost!r}")
        self.fn_cost = fn_cost

    def params(self) -> dict:
        return {"fn_cost": self.fn_cost}

    def _costs(self, rel: np.ndarray) -> np.ndarray:
        return np.where(rel, self._fn_cost(rel), 1.0)

    # a "ranking" here is a labelling: boolean (or 0/1) array over the candidates
    def ideal(self, labels: np.ndarray) -> np.ndarray:
        return np.asarray(labels) > 0

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        rel = np.asarray(labels) > 0
        y = np.asarray(ranking, dtype=bool)
        return float(self._costs(rel)[y != rel].sum() / len(rel))

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        rel = np.asarray(labels) > 0
        sign = np.where(np.asarray(ranking, dtype=bool), 1.0, -1.0)
        return self._costs(rel) * sign / (2.0 * len(rel))

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        rel = np.asarray(labels) > 0
        margin = np.where(rel, 1.0, -1.0) * np.asarray(scores, dtype=float)
        return np.where(margin < 1.0, ~rel, rel)

    def _fn_cost(self, rel: np.ndarray) -> float:
        if self.fn_cost == "balanced":
            n_pos = int(rel.sum())
            return (len(rel) - n_pos) / n_pos if n_pos else 1.0
        return float(self.fn_cost)

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray,
                        offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """All queries at once, costs and n̄ of the whole batch (:func:`._rank_kernels.classification_batch`)."""
        jit = _numba.kernels()
        scores, rel, offsets = _numba.check_batch(scores, labels, offsets)
        n_q = len(offsets) - 1
        deltas, coef = np.zeros(n_q), np.zeros(len(scores))
        if n_q:
            fn_cost, n_bar = self._fn_cost(rel), len(scores) / n_q         # of the whole batch
            threads.run_query_blocks(lambda lo, hi: jit.classification_batch(
                scores, rel, offsets[lo:hi + 1], fn_cost, n_bar, deltas[lo:hi], coef), offsets)
        return deltas, coef

class BalancedClassificationLoss(ClassificationLoss):
    """SVM_acc2: false negatives cost #non-relevant/#relevant of the training set."""

    name = "acc2"

    def __init__(self, fn_cost: Union[float, str] = "balanced"):
        super().__init__(fn_cost)
