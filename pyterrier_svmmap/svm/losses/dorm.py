"""DORM: NDCG loss with the permutation feature map φ_dorm (Le & Smola 2007; Chakrabarti et al. 2008 §3.1.3, §3.5).

Ψ(x, y) = Σ_i A(y(i)) φ(x, d_i) (Chakrabarti et al. Eq. 6), y(i) the 0-based rank of candidate i and
A(r) = 1/sqrt(1 + r) the decay profile of §3.1.3, Δ = 1 − nDCG@k as in :mod:`.ndcg` (ir_measures'
definition). The loss-augmented argmax of §3.5 is the assignment problem

    max_π Σ_{i,j} π_ij (s_i·A(j) − z_i·D(j)/DCG*)            (candidate i → rank j)

solved with ``scipy.optimize.linear_sum_assignment`` (Hungarian / Jonker–Volgenant, cubic).

**The window.** A cubic assignment over all candidates does not finish on real queries, so — as §3.5
suggests ("making A very sparse") — the decay is truncated to the top ``window`` ranks:
A(r) = 1/sqrt(1 + r) for r < window and 0 from there on. Ψ and H are *defined* with this truncated A,
H(y) = Δ(y) + Σ_{r < window} A(r)·s_{y⁻¹(r)}, and the argmax below is exact for it, provided
window ≥ k (enforced), so that ranks ≥ window carry neither decay nor discount. Then only the ``window``
best-scoring relevant and the ``window`` best-scoring non-relevant candidates can occupy the window
(a swap argument: within one relevance class, a higher score never fits a window slot worse,
the gain of putting it there instead being (s_hi − s_lo)·A(j) ≥ 0). So the assignment is a
(≤ 2·window) × window problem whatever the query's size; the candidates outside the window follow in
score order (immaterial to H). ``window=None`` keeps the full decay over all n ranks (exact, O(n³));
it is required when ``k=None``, because then every rank has a discount.

**Ψ(x, y*).** With φ_dorm, Ψ of the correct ranking depends on how equally relevant candidates are
ordered, which the labels do not say. We use the average over all correct rankings
(:meth:`DORMLoss.ideal_psi_coef`): each relevant candidate gets the mean of A over ranks 0..|P|−1,
each non-relevant one the mean over ranks |P|..n−1.

**Batch** (:meth:`DORMLoss.batch_violation`, what the solver calls). The same swap argument, applied to
every pair of same-class candidates, shows that some optimal assignment keeps each relevance class in
score order; the argmax is then a merge of the two sorted lists, found by a DP over (rank, relevant
placed) on the m = min(window, n) weighted ranks: O(m·min(|P|, m)) per query instead of a cubic
assignment (:func:`._rank_kernels.dorm_query`, compiled with numba); the single-query argmax
(:meth:`DORMLoss.argmax`) runs the same DP. The tests compare it with the assignment above, solved by
scipy (``tests/oracles/losses_reference.py``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

import pyterrier_svmmap.svm.losses._numba as _numba
from pyterrier_svmmap.svm.losses.base import Loss, positions
from pyterrier_svmmap.svm.losses.ndcg import discount_table, ndcg_of_ranking


class DORMLoss(_numba.CompiledBatch, Loss):
    """Δ = 1 − nDCG@k, Ψ = φ_dorm with A(r) = 1/sqrt(1 + r) truncated at ``window``; assignment argmax."""

    name = "dorm"

    def __init__(self, k: Optional[int] = 10, window: Optional[int] = 100):
        if k is not None and int(k) < 1:
            raise ValueError(f"k must be a positive integer or None, got {k!r}")
        self.k = None if k is None else int(k)
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

    def delta(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if not (np.asarray(labels) > 0).any():
            return 0.0
        return 1.0 - ndcg_of_ranking(ranking, labels, self.k)

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

    def ranking_call(self, n: int) -> _numba.KernelCall:
        """The compiled single-query argmax (:func:`._rank_kernels.dorm_ranking`: the DP of the batch kernel)
        for a query of ``n`` candidates."""
        return _numba.kernels().dorm_ranking, (_numba.as_int(self.k), _numba.as_int(self.window), discount_table(n + 1),
                                  self.decay(n + 1))

    def kernel_call(self, n_max: int) -> _numba.KernelCall:
        """The compiled batch (:func:`._rank_kernels.dorm_batch`) for queries of ≤ ``n_max`` candidates."""
        n = n_max + 1
        return _numba.kernels().dorm_batch, (_numba.as_int(self.k), _numba.as_int(self.window), discount_table(n),
                                self.decay(n))
