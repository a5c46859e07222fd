"""SVM-COMBO with shared slacks (Chakrabarti et al. 2008, §3.7): per query, the member with the most violated
constraint (docs/losses.md)."""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import Loss


#: violations this close (relative) to the best tie; a tie goes to the first member, so both paths agree
TIE_TOLERANCE = 1e-12


def most_violated_member(values: np.ndarray) -> np.ndarray:
    """Per query (column), the first member whose violation ties the best up to :data:`TIE_TOLERANCE`."""
    values = np.atleast_2d(values)
    best = values.max(axis=0)
    tol = TIE_TOLERANCE * np.maximum(1.0, np.abs(values).max(axis=0))
    return np.argmax(values >= best - tol, axis=0)


class ComboLoss(Loss):
    """Shared-slack combination of losses: per query, the member with the most violated constraint."""

    name = "combo"

    def __init__(self, losses: Sequence[Loss]):
        self.losses = list(losses)
        if not self.losses:
            raise ValueError("ComboLoss needs at least one loss")
        if any(l.needs_bias for l in self.losses):
            raise ValueError("classification losses cannot be combined with ranking losses")

    def params(self) -> dict:
        return {"losses": [repr(l) for l in self.losses]}

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        """Δ = max_l Δ_l (the aggregate loss of shared slacks)."""
        return max(l.delta(ranking, labels) for l in self.losses)

    def psi_coef(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Ψ of the members, defined only when they all share one feature map."""
        if any(type(l).psi_coef is not type(self.losses[0]).psi_coef for l in self.losses):
            raise ValueError("the combined losses use different feature maps; Ψ is per member "
                             "(use member_values / violation)")
        return self.losses[0].psi_coef(ranking, labels)

    def member_values(self, ranking: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Per member l, the violation Δ_l(y) − (c_l(y*) − c_l(y))·s of the constraint of ranking y."""
        s = np.asarray(scores, dtype=float)
        return np.array([l.delta(ranking, labels) - (l.ideal_psi_coef(labels) - l.psi_coef(ranking, labels)) @ s
                         for l in self.losses])

    def argmax(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The ranking of the member whose constraint is the most violated (:func:`combine_members`' choice)."""
        s = np.asarray(scores, dtype=float)
        offsets = np.array([0, len(s)], dtype=np.int64)
        return self.losses[int(_winners(self.member_batches(s, labels, offsets), s, offsets)[0])].argmax(s, labels)

    def violation(self, scores: np.ndarray, labels: np.ndarray) -> Tuple[float, np.ndarray]:
        s = np.asarray(scores, dtype=float)
        found = [l.violation(s, labels) for l in self.losses]
        return found[int(most_violated_member(np.array([[d - float(c @ s)] for d, c in found]))[0])]

    def batch_violation(self, scores: np.ndarray, labels: np.ndarray,
                        offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        scores = np.asarray(scores, dtype=float)
        offsets = np.asarray(offsets, dtype=np.int64)
        return combine_members(self.member_batches(scores, labels, offsets), scores, offsets)

    def member_batches(self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> list:
        """Every member's (Δ per query, coefficients), on one shared score sort when all have kernels."""
        if all(isinstance(l, _numba.CompiledBatch) for l in self.losses):
            return _numba.run_shared(self.losses, scores, labels, offsets)
        return [l.batch_violation(scores, labels, offsets) for l in self.losses]


def combine_members(results: list, scores: np.ndarray, offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Shared slacks over the members' batch results: per query q, (Δ, coefficients) of member ``_winners``[q]."""
    winner = _winners(results, scores, offsets)
    deltas = np.stack([d for d, _ in results])[winner, np.arange(len(offsets) - 1)]
    coef = np.stack([c for _, c in results])[np.repeat(winner, np.diff(offsets)), np.arange(offsets[-1])]
    return deltas, coef


def _winners(results: list, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query, the member whose constraint is the most violated (:func:`most_violated_member`)."""
    return most_violated_member(np.stack([d - segment_sums(c * scores, offsets) for d, c in results]))


def segment_sums(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    sizes = np.diff(offsets)
    out = np.zeros(len(sizes))
    nonempty = sizes > 0
    if nonempty.any():
        out[nonempty] = np.add.reduceat(x, offsets[:-1][nonempty])
    return out
